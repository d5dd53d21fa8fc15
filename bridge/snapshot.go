package bridge

import "time"

// Snapshot is everything one scheduling cycle looks at. The caller builds it fresh each cycle
// (the Kubernetes adapter from its informer caches); Schedule never keeps it.
//
// A Scheduler reused across cycles keeps what it resolved of each job's running tasks and
// takes it over when the next snapshot hands the job the same Running and Groups slices
// (the same arrays, the same lengths) on nodes laid out as before (carry.go). So a caller
// that changes a job's running tasks, or its groups' names, counts or requests, gives the
// job new slices and never writes into slices it handed over; listing each job at the
// same place as last cycle (new ones last) lets the Scheduler find it at once.
type Snapshot struct {
	// Now is the cycle's clock: aging, stale-gang grace and backfill windows use it, never
	// the wall clock, so the same snapshot always gives the same decisions.
	Now        time.Time    `json:"now" yaml:"now"`
	Config     Config       `json:"config" yaml:"config"`
	Partitions []Partition  `json:"partitions" yaml:"partitions"`
	Nodes      []Node       `json:"nodes" yaml:"nodes"`
	Queues     []Queue      `json:"queues" yaml:"queues"`
	QOS        []QOS        `json:"qos" yaml:"qos"`
	Jobs       []Job        `json:"jobs" yaml:"jobs"`
	Usage      []QueueUsage `json:"usage,omitempty" yaml:"usage,omitempty"`
	// NodeSets are the node lists task groups name in TaskGroup.NodeSet (see placement.go).
	NodeSets []NodeSet `json:"nodeSets,omitempty" yaml:"nodeSets,omitempty"`
	// NodeScores rank the nodes task groups prefer, named in TaskGroup.NodeScore.
	NodeScores []NodeScore `json:"nodeScores,omitempty" yaml:"nodeScores,omitempty"`
	// AdvanceReservations book nodes for windows of time (advance_reservations.go).
	AdvanceReservations []AdvanceReservation `json:"advanceReservations,omitempty" yaml:"advanceReservations,omitempty"`
}

// Config tunes the cycle. The zero value is usable.
type Config struct {
	// UsageFactor is KAI's k: how strongly recent usage above a queue's weight cuts its
	// over-quota share. 0 ignores history.
	UsageFactor float64 `json:"usageFactor,omitempty" yaml:"usageFactor,omitempty"`
	// StaleGangGrace is how long a gang may run below minMember before it is evicted;
	// 0 means DefaultStaleGangGrace.
	StaleGangGrace time.Duration `json:"staleGangGrace,omitempty" yaml:"staleGangGrace,omitempty"`
	// AgingInterval adds one priority point per interval a job has waited, so that a job
	// cannot starve behind a stream of equal-priority work. 0 disables aging.
	AgingInterval time.Duration `json:"agingInterval,omitempty" yaml:"agingInterval,omitempty"`
	// MaxConsolidationMoves bounds how many running jobs one consolidation may move;
	// 0 means DefaultMaxConsolidationMoves.
	MaxConsolidationMoves int `json:"maxConsolidationMoves,omitempty" yaml:"maxConsolidationMoves,omitempty"`
	// MaxConsolidations bounds how many pending gangs per partition and cycle may try
	// consolidation (each try looks at every node); 0 means DefaultMaxConsolidations.
	MaxConsolidations int `json:"maxConsolidations,omitempty" yaml:"maxConsolidations,omitempty"`
}

// Defaults for the zero Config.
const (
	DefaultStaleGangGrace        = 60 * time.Second
	DefaultMaxConsolidationMoves = 4
	DefaultMaxConsolidations     = 16
)

// Strategy says how a partition places work on nodes and on GPUs.
type Strategy string

// Placement strategies. Binpack fills the fullest node (and the fullest shared GPU) that fits;
// spread picks the emptiest.
const (
	Binpack Strategy = "binpack"
	Spread  Strategy = "spread"
)

// Partition is a pool of nodes with its own fair share (a Slurm partition).
type Partition struct {
	Name      string   `json:"name" yaml:"name"`
	Placement Strategy `json:"placement,omitempty" yaml:"placement,omitempty"`
	// AllowedQueues and AllowedQOS restrict who may run here; empty allows all.
	AllowedQueues []string `json:"allowedQueues,omitempty" yaml:"allowedQueues,omitempty"`
	AllowedQOS    []string `json:"allowedQOS,omitempty" yaml:"allowedQOS,omitempty"`
	// Topology lists the partition's topology levels, outermost first, each a node label
	// key (for example a zone, block and rack label): a node's domain at a level is the
	// value of that label. A job's preferred placement falls back outwards along this list.
	Topology []string `json:"topology,omitempty" yaml:"topology,omitempty"`
}

// Node is one machine.
type Node struct {
	Name      string            `json:"name" yaml:"name"`
	Partition string            `json:"partition" yaml:"partition"`
	Labels    map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
	// Allocatable is the node's capacity. Its GPU fields are used only when GPUs is empty:
	// GPUMilli/1000 devices of GPUMemoryMiB split evenly (a node known from labels alone).
	Allocatable Resources `json:"allocatable" yaml:"allocatable"`
	// Used is the CPU, memory and extended resources taken by pods that belong to no job in
	// this snapshot (daemon sets, pods of other schedulers); their GPU use is listed per
	// device in GPU.Taken.
	Used          Resources `json:"used,omitempty" yaml:"used,omitempty"`
	Unschedulable bool      `json:"unschedulable,omitempty" yaml:"unschedulable,omitempty"`
	GPUs          []GPU     `json:"gpus,omitempty" yaml:"gpus,omitempty"`
	// Foreign are the tasks on the node that belong to no job of the snapshot (other
	// schedulers' pods), which affinity and spread selectors match too.
	Foreign []ForeignTask `json:"foreign,omitempty" yaml:"foreign,omitempty"`
	// Yielding lists tasks of no job that give the node up the moment a job is placed on it
	// (an idle-node validation): their use is in neither Used nor GPUs' Taken, so the node
	// is placed on as if they were gone, and each bind onto the node asks them to go (Yields).
	Yielding []string `json:"yielding,omitempty" yaml:"yielding,omitempty"`
}

// GPU is one device of a node.
type GPU struct {
	Index     int32  `json:"index" yaml:"index"`
	UUID      string `json:"uuid,omitempty" yaml:"uuid,omitempty"`
	MemoryMiB int64  `json:"memoryMiB" yaml:"memoryMiB"`
	Model     string `json:"model,omitempty" yaml:"model,omitempty"`
	Unhealthy bool   `json:"unhealthy,omitempty" yaml:"unhealthy,omitempty"`
	// MIG marks a device in MIG mode: it is handed out only whole (as the device plugin
	// exposes it) and its node takes no fractions.
	MIG bool `json:"mig,omitempty" yaml:"mig,omitempty"`
	// Taken lists what is already on the device. Entries naming a running task of a job in
	// the snapshot are ignored (the job's placement is authoritative); the rest are counted
	// as foreign usage.
	Taken []GPUTaken `json:"taken,omitempty" yaml:"taken,omitempty"`
}

// GPUTaken is one task's share of a device.
type GPUTaken struct {
	Task      string `json:"task" yaml:"task"`
	Milli     int32  `json:"milli" yaml:"milli"`
	MemoryMiB int64  `json:"memoryMiB,omitempty" yaml:"memoryMiB,omitempty"`
	// Hold marks what holds a shared device for the jobs' tasks that share it (a
	// reservation in the device plugin's books) and goes when the last of them goes. While
	// tasks share the device it is theirs, so evicting them frees it; once none does, the
	// device is placed on as free and a bind onto it waits until the hold is gone
	// (AfterEvictions), the way a bind waits for its victims.
	Hold bool `json:"hold,omitempty" yaml:"hold,omitempty"`
}

// Queue is a node of the account tree. Only leaves take jobs.
type Queue struct {
	Name     string           `json:"name" yaml:"name"`
	Parent   string           `json:"parent,omitempty" yaml:"parent,omitempty"`
	Priority int32            `json:"priority,omitempty" yaml:"priority,omitempty"`
	Quotas   []PartitionQuota `json:"quotas,omitempty" yaml:"quotas,omitempty"`
}

// PartitionQuota is a queue's quota in one partition, per resource.
type PartitionQuota struct {
	Partition string        `json:"partition" yaml:"partition"`
	GPU       ResourceQuota `json:"gpu,omitempty" yaml:"gpu,omitempty"`             // thousandths of a GPU
	GPUMemory ResourceQuota `json:"gpuMemory,omitempty" yaml:"gpuMemory,omitempty"` // MiB
	CPU       ResourceQuota `json:"cpu,omitempty" yaml:"cpu,omitempty"`             // millicores
	Memory    ResourceQuota `json:"memory,omitempty" yaml:"memory,omitempty"`       // bytes
}

func (q PartitionQuota) dim(d Dim) ResourceQuota {
	switch d {
	case DimGPU:
		return q.GPU
	case DimGPUMemory:
		return q.GPUMemory
	case DimCPU:
		return q.CPU
	}
	return q.Memory
}

// ResourceQuota is one resource's quota for a queue. A resource left entirely unset (no
// quota, limit or weight; or no PartitionQuota for the partition) shares idle capacity with
// weight 1, so a tree configured only at its leaves works; to hold a queue to its quota, set
// its limit to it.
type ResourceQuota struct {
	Quota           int64   `json:"quota,omitempty" yaml:"quota,omitempty"` // deserved
	Limit           int64   `json:"limit,omitempty" yaml:"limit,omitempty"` // 0: no limit
	OverQuotaWeight float64 `json:"overQuotaWeight,omitempty" yaml:"overQuotaWeight,omitempty"`
}

// QOS is a Slurm quality of service: priority, preemptibility and per-user and group limits.
// A zero limit means no limit.
type QOS struct {
	Name           string        `json:"name" yaml:"name"`
	Priority       int32         `json:"priority,omitempty" yaml:"priority,omitempty"`
	Preemptible    bool          `json:"preemptible,omitempty" yaml:"preemptible,omitempty"`
	MaxGPUsPerUser int64         `json:"maxGPUsPerUser,omitempty" yaml:"maxGPUsPerUser,omitempty"` // thousandths
	MaxJobsPerUser int32         `json:"maxJobsPerUser,omitempty" yaml:"maxJobsPerUser,omitempty"`
	GrpTRES        Resources     `json:"grpTRES,omitempty" yaml:"grpTRES,omitempty"`
	MaxWall        time.Duration `json:"maxWall,omitempty" yaml:"maxWall,omitempty"`
}

// Job is a gang: its tasks start together or not at all.
type Job struct {
	// ID must be unique in the snapshot; binds and evictions name jobs by it.
	ID        string `json:"id" yaml:"id"`
	Queue     string `json:"queue" yaml:"queue"`
	Partition string `json:"partition" yaml:"partition"`
	User      string `json:"user,omitempty" yaml:"user,omitempty"`
	// QOS is empty for none; the caller fills in a default QOS where the site has one.
	QOS string `json:"qos,omitempty" yaml:"qos,omitempty"`
	// Priority adds to the QOS priority.
	Priority int32 `json:"priority,omitempty" yaml:"priority,omitempty"`
	// Preemptible jobs may run over quota and may be evicted; a preemptible QOS makes every
	// job in it preemptible.
	Preemptible bool `json:"preemptible,omitempty" yaml:"preemptible,omitempty"`
	// MinMember is how many tasks must run together; 0 means all of them.
	MinMember    int32             `json:"minMember,omitempty" yaml:"minMember,omitempty"`
	SubmitTime   time.Time         `json:"submitTime" yaml:"submitTime"`
	TimeLimit    time.Duration     `json:"timeLimit,omitempty" yaml:"timeLimit,omitempty"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty" yaml:"nodeSelector,omitempty"`
	// Labels and Scope are what affinity and spread selectors match the job's tasks by
	// (Selector): its pods' labels and namespace.
	Labels map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
	Scope  string            `json:"scope,omitempty" yaml:"scope,omitempty"`
	// Placement constrains where the gang's tasks go relative to one another and to other
	// jobs: topology, one task per node, whole nodes.
	Placement Placement `json:"placement,omitempty" yaml:"placement,omitempty"`
	// Alternatives are the ways the job may run, in order of preference (sbatch -p a,b,
	// --constraint [a|b]): each a partition and a node set for all its groups. The job
	// runs in the first one where it can start (see alternatives.go); empty: the job as it
	// stands, in Partition.
	Alternatives []Alternative `json:"alternatives,omitempty" yaml:"alternatives,omitempty"`
	Groups       []TaskGroup   `json:"groups" yaml:"groups"`
	Running      []RunningTask `json:"running,omitempty" yaml:"running,omitempty"`
	// StaleSince is when the gang dropped below MinMember running tasks; zero when it has not.
	StaleSince time.Time `json:"staleSince,omitempty" yaml:"staleSince,omitempty"`
	// Reservation names the advance reservation it runs in (sbatch --reservation); empty:
	// none, though a Magnetic one may draw it in.
	Reservation string `json:"reservation,omitempty" yaml:"reservation,omitempty"`
}

// TaskGroup is a set of identical tasks of a job (a PodGroup's sub-group, a Slurm het-job
// component).
type TaskGroup struct {
	Name  string `json:"name" yaml:"name"`
	Count int32  `json:"count" yaml:"count"`
	// Request is per task: CPU, memory and extended resources. Its GPU fields are ignored;
	// GPU says how GPUs are asked for.
	Request Resources  `json:"request" yaml:"request"`
	GPU     GPURequest `json:"gpu,omitempty" yaml:"gpu,omitempty"`
	// NodeSet names the Snapshot.NodeSets entry that lists the only nodes its tasks may use
	// (what their node affinity, tolerations, --constraint, -w and -x allow); empty: any
	// node of the partition.
	NodeSet string `json:"nodeSet,omitempty" yaml:"nodeSet,omitempty"`
	// NodeScore names the Snapshot.NodeScores entry that ranks the nodes its tasks prefer
	// (preferred node affinity); empty: no preference.
	NodeScore string `json:"nodeScore,omitempty" yaml:"nodeScore,omitempty"`
	// PendingTasks optionally names the tasks not yet running (existing pods); binds use
	// these names in order, otherwise "<job>-<group>-<n>".
	PendingTasks []string `json:"pendingTasks,omitempty" yaml:"pendingTasks,omitempty"`
}

// GPUKind is how a task asks for GPUs.
type GPUKind string

// GPU request kinds.
const (
	GPUNone          GPUKind = ""
	GPUWhole         GPUKind = "whole"          // Devices whole GPUs
	GPUFraction      GPUKind = "fraction"       // Milli thousandths of one shared GPU
	GPUMemory        GPUKind = "gpu-memory"     // MemoryMiB of one shared GPU
	GPUMultiFraction GPUKind = "multi-fraction" // Milli on each of Devices shared GPUs of one node
)

// GPURequest is one task's GPU ask.
type GPURequest struct {
	Kind      GPUKind `json:"kind,omitempty" yaml:"kind,omitempty"`
	Devices   int32   `json:"devices,omitempty" yaml:"devices,omitempty"`
	Milli     int32   `json:"milli,omitempty" yaml:"milli,omitempty"`
	MemoryMiB int64   `json:"memoryMiB,omitempty" yaml:"memoryMiB,omitempty"`
}

// RunningTask is a task already placed.
type RunningTask struct {
	Name  string  `json:"name" yaml:"name"`
	Group string  `json:"group,omitempty" yaml:"group,omitempty"` // empty: the first group
	Node  string  `json:"node" yaml:"node"`
	GPUs  []int32 `json:"gpus,omitempty" yaml:"gpus,omitempty"` // device indices
	// GPUMilli and GPUMemoryMiB are the portion taken on each device for shared kinds;
	// zero means what the group asks for.
	GPUMilli     int32     `json:"gpuMilli,omitempty" yaml:"gpuMilli,omitempty"`
	GPUMemoryMiB int64     `json:"gpuMemoryMiB,omitempty" yaml:"gpuMemoryMiB,omitempty"`
	Start        time.Time `json:"start,omitempty" yaml:"start,omitempty"`
}

// QueueUsage is a queue's decayed historical usage in one partition (from the accounting
// ledger). Only ratios between sibling queues matter, so any consistent unit works.
type QueueUsage struct {
	Queue     string    `json:"queue" yaml:"queue"`
	Partition string    `json:"partition" yaml:"partition"`
	Usage     Resources `json:"usage" yaml:"usage"`
}

// ForeignTask is a task of no job in the snapshot, as selectors see it.
type ForeignTask struct {
	Scope  string            `json:"scope,omitempty" yaml:"scope,omitempty"`
	Labels map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
}
