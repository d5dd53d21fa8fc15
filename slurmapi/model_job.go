package slurmapi

import "time"

// JobDesc is a validated job submission: what the REST body, the script's
// #SBATCH directives and the server's defaults together ask for. It is the
// one internal form every version's submit request decodes into and the
// form the Backend stores (on Kubernetes: in the job's PodGroup).
type JobDesc struct {
	Name      string `json:"name"`
	User      string `json:"user"`
	Partition string `json:"partition,omitempty"`
	Account   string `json:"account,omitempty"`
	QOS       string `json:"qos,omitempty"`
	Script    string `json:"script"`
	// IdempotencyKey is the submission's Idempotency-Key header (a Sluice
	// extension, docs/rest-compatibility.md): a retry by the same user with
	// the same key gets the first submission's job id instead of a second
	// job. BodyHash tells a retry from another submission reusing the key.
	// Neither is part of the job.
	IdempotencyKey string `json:"-"`
	// TestOnly is sbatch --test-only: the backend checks what it checks at submit
	// (MaxSubmitJobs) and stores nothing, taking no job id.
	TestOnly bool   `json:"-"`
	BodyHash string `json:"-"`
	// Argv are the script's arguments ($1...), as `sbatch job.sh a b`
	// passes them; REST argv[0] (the script's path) is not among them.
	Argv []string `json:"argv,omitempty"`
	// Command is the batch script's path as sbatch named it (REST argv[0]):
	// scontrol's Command; "" for --wrap, stdin and manifest workloads.
	Command string `json:"-"`

	Nodes        int `json:"nodes"`               // minimum node count, >= 1
	MaxNodes     int `json:"max_nodes,omitempty"` // 0: same as Nodes
	Tasks        int `json:"tasks"`               // total tasks, >= 1
	TasksPerNode int `json:"tasks_per_node,omitempty"`
	CPUsPerTask  int `json:"cpus_per_task"`

	// Memory in MiB; at most one of the three is set, as with sbatch.
	MemoryPerNode int64 `json:"memory_per_node,omitempty"`
	MemoryPerCPU  int64 `json:"memory_per_cpu,omitempty"`
	MemoryPerGPU  int64 `json:"memory_per_gpu,omitempty"`

	GPUs GPURequest `json:"gpus"`

	// TimeLimit is the wall-clock limit; 0 means the partition default.
	TimeLimit time.Duration `json:"time_limit,omitempty"`

	Environment    []string  `json:"environment,omitempty"` // KEY=VALUE
	WorkDir        string    `json:"current_working_directory,omitempty"`
	Stdout         string    `json:"standard_output,omitempty"`
	Stderr         string    `json:"standard_error,omitempty"`
	Stdin          string    `json:"standard_input,omitempty"`
	Requeue        bool      `json:"requeue,omitempty"`
	Hold           bool      `json:"hold,omitempty"`
	Dependency     string    `json:"dependency,omitempty"`
	Array          string    `json:"array,omitempty"` // as given: "0-15%4"
	BeginTime      time.Time `json:"begin_time,omitzero"`
	Comment        string    `json:"comment,omitempty"`
	ContainerImage string    `json:"container_image,omitempty"`
	Priority       int64     `json:"priority,omitempty"` // 0: computed
	// Reservation is the advance reservation the job runs in (--reservation); "" none.
	Reservation string `json:"reservation,omitempty"`
	// Nice is taken off the job's priority; below 0 only for operators.
	Nice int64 `json:"nice,omitempty"`

	// Placement (docs/placement.md): Constraint is --constraint as given (node features);
	// NodeList the nodes the job must use (--nodelist), Exclude those it may not
	// (--exclude); Exclusive gives it whole nodes; Switches is --switches' count.
	Constraint string   `json:"constraints,omitempty"`
	NodeList   []string `json:"required_nodes,omitempty"`
	Exclude    []string `json:"excluded_nodes,omitempty"`
	Exclusive  bool     `json:"exclusive,omitempty"`
	Switches   int      `json:"required_switches,omitempty"`
	// SwitchWait is how long the job waits for Switches before it runs anywhere (0: no end).
	SwitchWait time.Duration `json:"-"`
	// NodesGiven says the node count was asked for (-N, nodes): a --gpus count may
	// otherwise spread the job over more nodes.
	NodesGiven bool `json:"-"`
	// SpreadJob (--spread-job) puts a job with no node count on as many nodes as its GPUs
	// or tasks divide evenly over, rather than on as few as hold them.
	SpreadJob bool `json:"-"`
	// Signal is the warning signal before the time limit, as --signal
	// writes it with flags and time ("B:10@60"; sbatch.Signal); "" none.
	Signal string `json:"-"`
	// SubmitEnv are the variables sbatch exports from the submission's
	// options (SLURM_NTASKS only for -n, SLURM_MEM_PER_CPU, SLURM_OPEN_MODE,
	// SLURM_SUBMIT_HOST ...; setSubmitEnv); the job's pods carry them.
	SubmitEnv map[string]string `json:"-"`
}

// GPURequest is the job's GPU demand in the core's terms. Whole GPUs are
// counted per node, per task or per job (at most one of them, as sbatch);
// Fraction is a share of one GPU (0 < Fraction < 1) from gres/shard or
// gres/mps, placed on a shared device.
type GPURequest struct {
	Type     string  `json:"type,omitempty"` // GPU model, e.g. "h100"
	PerNode  int     `json:"per_node,omitempty"`
	PerTask  int     `json:"per_task,omitempty"`
	PerJob   int     `json:"per_job,omitempty"`
	Fraction float64 `json:"fraction,omitempty"`
	// Shards keeps a gres/shard count as asked, for display.
	Shards int `json:"shards,omitempty"`
}

// Total is the number of whole GPUs the job needs on all its nodes.
func (g GPURequest) Total(nodes, tasks int) int {
	switch {
	case g.PerJob > 0:
		return g.PerJob
	case g.PerTask > 0:
		return g.PerTask * tasks
	default:
		return g.PerNode * nodes
	}
}

// Job is a job as squeue, scontrol and sacct show it: Slurm-submitted
// and manifest-submitted workloads alike.
type Job struct {
	ID          uint32
	ArrayJobID  uint32 // 0 unless an array task
	ArrayTaskID *int   // nil unless an array task
	// ArrayPending is set on an array's record while tasks are not split
	// off yet: their indices as Slurm shows them ("4-15"); squeue shows
	// the record as ID_[4-15].
	ArrayPending string
	Desc         JobDesc

	// State is Slurm's base state first, then flags: ["PENDING"],
	// ["RUNNING"], ["COMPLETED"], ["PENDING","REQUEUED"], ...
	State      []string
	Reason     string // why pending ("Resources", "Priority", ...) or "None"
	SubmitTime time.Time
	StartTime  time.Time
	EndTime    time.Time
	NodeList   string   // "node-[1-2]"
	NodeNames  []string // allocated nodes in order
	CPUs       int      // allocated (or requested while pending)
	TRESReq    string   // "cpu=16,mem=64G,node=2,billing=16,gres/gpu=16"
	TRESAlloc  string
	ExitCode   int // process exit code
	Signal     int // terminating signal, 0 if none
	Priority   int64
	// Manifest is true for a workload that came in as a Kubernetes
	// manifest (no script; Desc holds what could be derived).
	Manifest bool
}

// JobUpdate is what POST job/{id} may change. Nil fields stay as they are.
type JobUpdate struct {
	Hold      *bool
	TimeLimit *time.Duration
	Priority  *int64
	Nice      *int64
	Comment   *string
	Name      *string
	// Requeue is whether a disruption requeues the job (scontrol update Requeue=).
	Requeue *bool
	// Partition, QOS and Dependency change only while the job is
	// pending; the server has checked them against the catalogue.
	Partition  *string
	QOS        *string
	Dependency *string
}

// JobFilter narrows a job listing. Zero values match everything.
type JobFilter struct {
	IDs        []uint32
	Users      []string
	Accounts   []string
	Partitions []string
	States     []string
	Since      time.Time // only jobs changed since (update_time)
}

// SubmitResult is what the backend acknowledges. Once returned, the id
// survives a server restart.
type SubmitResult struct {
	JobID   uint32
	StepID  string // "batch"
	Message string // job_submit_user_msg
	// Replayed is true when JobID is an earlier submission's, whose
	// Idempotency-Key this one repeated: nothing new was stored.
	Replayed bool
}

// CancelRequest signals one or more jobs (scancel).
type CancelRequest struct {
	Signal int // 9 (SIGKILL) cancels; others are delivered to the job
	Batch  bool
	Full   bool
	// ArrayTask names the array task the job id was resolved from
	// (scancel 123_4): only that task is cancelled, not the whole array,
	// and one not split off yet is dropped from the array's record.
	ArrayTask *int
}
