package bridge

// Decisions is what one cycle wants done. The caller evicts first, then binds; binds with
// AfterEvictions wait until the evictions they follow have released their resources.
type Decisions struct {
	Binds     []Bind     `json:"binds,omitempty"`
	Evictions []Eviction `json:"evictions,omitempty"`
	// Pending has one entry for every job that has nothing running and is not started by
	// this cycle, in the order the cycle considered them (jobs it could not consider at all
	// last, by id).
	Pending []Pending `json:"pending,omitempty"`
	// Shares is the fair-share standing of every queue in every partition where it has
	// quota, work or demand, ordered by partition then queue.
	Shares []QueueShare `json:"shares,omitempty"`
	// Reservations are nodes held for a blocked gang (backfill), one per partition at most.
	Reservations []Reservation `json:"reservations,omitempty"`
	// Problems are inputs the cycle could not use (a running task on an unknown node, a
	// queue whose parent is missing); each names the object and says what is wrong.
	Problems []Problem `json:"problems,omitempty"`
	// Yields are the yielding tasks (Node.Yielding) on nodes this cycle binds onto, in the
	// order of the first bind onto each node; the caller removes them before those binds.
	Yields []Yield `json:"yields,omitempty"`
}

// Yield asks a yielding task to leave its node for a job.
type Yield struct {
	Node   string `json:"node" yaml:"node"`
	Task   string `json:"task" yaml:"task"`
	ForJob string `json:"forJob" yaml:"forJob"`
}

// Action names the step of the cycle that made a bind.
type Action string

// Actions.
const (
	ActionAllocate    Action = "allocate"
	ActionReclaim     Action = "reclaim"
	ActionPreempt     Action = "preempt"
	ActionConsolidate Action = "consolidate"
)

// Bind places one task.
type Bind struct {
	Job   string     `json:"job"`
	Group string     `json:"group"`
	Task  string     `json:"task"`
	Node  string     `json:"node"`
	GPUs  []BoundGPU `json:"gpus,omitempty"`
	// GPUMilli is the portion of each device in GPUs (1000 for whole devices);
	// GPUMemoryMiB is the memory granted on each device.
	GPUMilli       int32  `json:"gpuMilli,omitempty"`
	GPUMemoryMiB   int64  `json:"gpuMemoryMiB,omitempty"`
	Action         Action `json:"action"`
	AfterEvictions bool   `json:"afterEvictions,omitempty"`
}

// BoundGPU is one device given to a task.
type BoundGPU struct {
	Index int32  `json:"index"`
	UUID  string `json:"uuid,omitempty"`
}

// EvictionKind says why a running task is evicted.
type EvictionKind string

// Eviction kinds.
const (
	EvictReclaim     EvictionKind = "reclaim"     // another queue takes back its fair share
	EvictPreempt     EvictionKind = "preempt"     // higher priority work in the same queue
	EvictConsolidate EvictionKind = "consolidate" // moved to defragment; rebound in Binds
	EvictStaleGang   EvictionKind = "stale-gang"  // ran below minMember past its grace
)

// Eviction removes one running task.
type Eviction struct {
	Job    string       `json:"job"`
	Task   string       `json:"task"`
	Node   string       `json:"node"`
	Kind   EvictionKind `json:"kind"`
	ForJob string       `json:"forJob,omitempty"`
	Reason string       `json:"reason"`
}

// Pending explains why a job waits: Code is short and Slurm-like (squeue shows "(Code)"),
// Reason is one line for the user.
type Pending struct {
	Job    string `json:"job"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// Pending reason codes. Where Slurm has a code for the same condition it is reused.
const (
	ReasonResources         = "Resources"                     // not enough free capacity now
	ReasonPriority          = "Priority"                      // capacity went to higher-ranked work
	ReasonReservation       = "Reservation"                   // fits only on nodes held for another gang
	ReasonPartitionConfig   = "PartitionConfig"               // can never fit in this partition
	ReasonQueueLimit        = "AssocGrpGRES"                  // queue (or a parent) at its limit
	ReasonQueueQuota        = "AssocGrpNonPreemptible"        // non-preemptible work beyond deserved quota
	ReasonQOSGPUsPerUser    = "QOSMaxGRESPerUser"             // QOS per-user GPU limit
	ReasonQOSJobsPerUser    = "QOSMaxJobsPerUserLimit"        // QOS per-user job limit
	ReasonQOSGroupTRES      = "QOSGrpTRES"                    // QOS group limit
	ReasonQOSMaxWall        = "QOSMaxWallDurationPerJobLimit" // time limit above the QOS maximum
	ReasonAccountNotAllowed = "AccountNotAllowed"             // partition does not allow the queue
	ReasonQOSNotAllowed     = "QOSNotAllowed"                 // partition does not allow the QOS
	ReasonInvalidAccount    = "InvalidAccount"                // unknown queue, or not a leaf
	ReasonInvalidQOS        = "InvalidQOS"                    // unknown QOS
	ReasonInvalidPartition  = "InvalidPartition"              // unknown partition
	ReasonBadConstraints    = "BadConstraints"                // malformed request, or no node could ever satisfy it
	ReasonReqNodeNotAvail   = "ReqNodeNotAvail"               // the only nodes it may use are unavailable
)

// QueueShare is one queue's standing in one partition.
type QueueShare struct {
	Queue     string `json:"queue"`
	Partition string `json:"partition"`
	// Deserved is the configured quota; FairShare is what this cycle's division gave the
	// queue (deserved plus its over-quota part); Allocated is in use after this cycle's
	// decisions; Requested is allocated plus pending demand.
	Deserved  Resources `json:"deserved"`
	FairShare Resources `json:"fairShare"`
	Allocated Resources `json:"allocated"`
	Requested Resources `json:"requested"`
}

// Reservation lists the nodes held for a blocked gang.
type Reservation struct {
	Job       string   `json:"job"`
	Partition string   `json:"partition"`
	Nodes     []string `json:"nodes"`
}

// Problem is an input the cycle could not use.
type Problem struct {
	Object  string `json:"object"`
	Message string `json:"message"`
}
