package slurmapi

import "time"

// Node is one Kubernetes node shown as a Slurm node.
type Node struct {
	Name       string
	Address    string
	State      []string // "IDLE", "MIXED", "ALLOCATED", "DOWN", plus flags "DRAIN"
	Reason     string
	ReasonTime time.Time
	// Comment is the node's health record: its last validation (result, when, how long,
	// what failed), as scontrol show node prints it.
	Comment    string
	ReasonUser string
	Partitions []string
	CPUs       int
	AllocCPUs  int
	MemoryMiB  int64
	AllocMiB   int64
	GRES       string // "gpu:h100:8"
	GRESUsed   string // "gpu:h100:2(IDX:0-1)"
	Features   []string
	// Topology is the node's domain at each topology level of its partitions, outermost
	// first: "zone=a,rack=r1" (the Partition's spec.topology label keys and values).
	Topology string
	BootTime time.Time
	Arch     string
	OS       string
}

// Partition is a Sluice Partition (node pool) shown as a Slurm partition.
type Partition struct {
	Name           string
	Nodes          string // node list expression
	NodeCount      int
	CPUs           int
	GPUType        string // GPU model the partition offers ("h100"); empty: any
	GPUs           int
	DefaultTime    time.Duration // 0: none
	MaxTime        time.Duration // 0: unlimited
	Default        bool
	State          string // "UP", "DOWN", "DRAIN", "INACTIVE"
	AllowAccounts  []string
	AllowQOS       []string
	DefaultImage   string
	Priority       int
	MaxNodesPerJob int // 0: unlimited
	// NodesKnown says NodeCount and NodeSizes describe the partition's
	// nodes; submissions are then checked against them.
	NodesKnown bool
	NodeSizes  []NodeSize
}

// Share is one row of sshare: an account, or a user inside an account.
type Share struct {
	ID              int
	Cluster         string
	Name            string // account name, or user name for user rows
	Parent          string
	Partition       string
	User            bool // true for a user row
	Shares          int64
	SharesNorm      float64
	RawUsage        int64
	EffectiveUsage  float64
	FairshareFactor float64
	FairshareLevel  float64
}

// Diag is what sdiag reports about the server.
type Diag struct {
	StartTime     time.Time
	JobsSubmitted int64
	JobsStarted   int64
	JobsCompleted int64
	JobsCanceled  int64
	JobsFailed    int64
	JobsPending   int64
	JobsRunning   int64
	LastCycle     time.Duration
	MaxCycle      time.Duration
	MeanCycle     time.Duration
	Cycles        int64
}

// SchedulerStats are the scheduler's cycle figures sdiag shows; the
// server that runs the scheduler provides them (Config.SchedulerStats).
type SchedulerStats struct {
	Cycles          int64
	Last, Max, Mean time.Duration
}
