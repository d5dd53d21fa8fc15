package slurmapi

import "time"

// Account is a Slurm account: a Sluice Queue in the account tree.
type Account struct {
	Name         string
	Description  string
	Organization string
	Parent       string // "" for a root account
	Coordinators []string
	// MaxSubmitJobs caps each user's pending and running jobs in the
	// account (Slurm's association MaxSubmitJobs); 0: unlimited.
	MaxSubmitJobs int
}

// Association ties a user (or, with User empty, an account) to an account
// and optionally a partition, with the QOS it may use.
type Association struct {
	ID         int
	Cluster    string
	Account    string
	User       string // "" for the account's own association
	Partition  string
	Parent     string
	QOS        []string
	DefaultQOS string
	Shares     int64 // fair-share raw shares, 0: default (1)
	IsDefault  bool  // the user's default account
}

// QOS is a quality of service: a Sluice QOS object.
type QOS struct {
	ID             int
	Name           string
	Description    string
	Priority       int64
	Preemptible    bool   // other QOS may preempt this one
	PreemptMode    string // "REQUEUE", "CANCEL", "OFF"
	UsageFactor    float64
	MaxWall        time.Duration // 0: unlimited
	MaxJobsPerUser int           // 0: unlimited
	// MaxSubmitJobsPerUser caps one user's pending and running jobs of
	// this QOS; 0: unlimited.
	MaxSubmitJobsPerUser int
	MaxTRESPerUser       string // "gres/gpu=16"
	GrpTRES              string
}

// User is a Slurm user known to the accounting side.
type User struct {
	Name           string
	DefaultAccount string
	AdminLevel     string   // "None", "Operator", "Administrator"
	Coordinates    []string // accounts this user coordinates
	Associations   []Association
}

// TRES is a trackable resource type.
type TRES struct {
	ID   int
	Type string // "cpu", "mem", "node", "gres", "billing"
	Name string // "gpu" for gres/gpu
}

// Cluster describes the one cluster Sluice presents.
type Cluster struct {
	Name       string
	Controller string
	Port       int
	RPCVersion int
}
