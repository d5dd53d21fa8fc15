package v1alpha1

import (
	"slices"
	"strings"
)

// Label, annotation, taint and resource names shared by every Sluice
// component, kept in one place so the scheduler, webhook, Slurm API, agent
// and rig cannot drift apart.
const (
	// DefaultSchedulerName is the schedulerName of pods Sluice schedules,
	// unless configured otherwise.
	DefaultSchedulerName = "sluice"
	// DefaultQueue is the queue of pods that name none, in a namespace
	// that names none.
	DefaultQueue = "default"

	// QueueLabel names a pod's (or its owner's, or its namespace's) Queue.
	QueueLabel = "sluice.dev/queue"
	// KAIQueueLabel is KAI Scheduler's queue label, accepted so KAI
	// manifests run unchanged. QueueLabel wins when both are set.
	KAIQueueLabel = "kai.scheduler/queue"
	// JobIDLabel holds the Slurm-style job id on a PodGroup and its pods.
	JobIDLabel = "sluice.dev/job-id"
	// SlurmJobPodLabel marks every pod made for a Slurm job (by the Slurm API's pod
	// factory), so readers can leave them out of a List of other numbered pods.
	SlurmJobPodLabel = "sluice.dev/slurm-job"
	// NodeIndexLabel is a Slurm job's pod's SLURM_NODEID within its job.
	NodeIndexLabel = "sluice.dev/node-index"
	// PartitionLabel puts a node in a partition (Partition node selectors
	// use it) and, on a pod or its owner, names the pod's partition.
	PartitionLabel = "sluice.dev/partition"

	// PriorityAnnotation on a PodGroup is a job priority an operator set
	// (sbatch --priority, scontrol update priority=N): it adds to the QOS
	// priority when the scheduler orders pending jobs.
	PriorityAnnotation = "sluice.dev/priority"
	// NiceAnnotation on a PodGroup is the job's nice (sbatch --nice,
	// scontrol update nice=N): it is taken off the priority when the
	// scheduler orders pending jobs. Only operators may set it below 0.
	NiceAnnotation = "sluice.dev/nice"

	// BeginTimeAnnotation (RFC 3339) on a Slurm job's PodGroup is sbatch --begin: the
	// job may not start before it (pending reason BeginTime).
	BeginTimeAnnotation = "sluice.dev/begin-time"

	// SubmitTimeAnnotation (RFC 3339, nanoseconds) on a PodGroup is when its
	// job was submitted, where that is earlier than the PodGroup's creation (a
	// Slurm job acknowledged in a batch); see PodGroup.SubmitTime.
	SubmitTimeAnnotation = "sluice.dev/submit-time"

	// PodGroupAnnotation on a pod names its PodGroup explicitly, overriding
	// the group the pod grouper would derive from the pod's owners.
	PodGroupAnnotation = "sluice.dev/pod-group"
	// PodGroupDerivedAnnotation ("true") says the webhook derived the pod's
	// PodGroupAnnotation at admission from its owners, as the pod grouper
	// would: the grouper creates that group if it does not exist yet, and
	// the pod needs no patch. Without it the named group must exist.
	PodGroupDerivedAnnotation = "sluice.dev/pod-group-derived"
	// GPUAssignmentAnnotation is written at bind time: the GPUs (indices
	// and UUIDs) and the portion of each the pod was given.
	GPUAssignmentAnnotation = "sluice.dev/gpu-assignment"
	// VisibleDevicesAnnotation is written at bind time with the assignment:
	// the comma-separated GPU UUIDs (indices where a node publishes no
	// UUIDs), ready for VisibleDevicesEnv.
	VisibleDevicesAnnotation = "sluice.dev/visible-devices"
	// GPUPortionAnnotation is written at bind time with the assignment: the
	// portion of each GPU the pod may use, "1" for whole GPUs, e.g. "0.25".
	GPUPortionAnnotation = "sluice.dev/gpu-portion"
	// TopologyRequiredAnnotation on a PodGroup (or the pod of a group of one) names a
	// topology level, a node label key such as sluice.dev/rack: every pod of the gang runs
	// on nodes with one and the same value of it. TopologyPreferredAnnotation packs the
	// gang into one domain of the level when one has room, else one of the next outer
	// level of its Partition's topology. KAI's annotations of the same meaning are
	// accepted too; Sluice's win when both are set.
	TopologyRequiredAnnotation     = "sluice.dev/topology-required"
	TopologyPreferredAnnotation    = "sluice.dev/topology-preferred"
	KAITopologyRequiredAnnotation  = "kai.scheduler/topology-required-placement"
	KAITopologyPreferredAnnotation = "kai.scheduler/topology-preferred-placement"
	// ExclusiveAnnotation ("true") on a PodGroup gives the gang whole nodes: no pod of
	// another job shares them (sbatch --exclusive).
	ExclusiveAnnotation = "sluice.dev/exclusive"
	// NodeAffinityAnnotation on a Slurm job's PodGroup is a JSON corev1.NodeSelector
	// (required node affinity) its pods must satisfy: what --constraint, --nodelist and
	// --exclude ask. Written by the Slurm API only.
	NodeAffinityAnnotation = "sluice.dev/node-affinity"
	// NodeAffinityChoicesAnnotation replaces NodeAffinityAnnotation for a --constraint with
	// a matching or ([r1|r2]): a JSON list of corev1.NodeSelector, one per choice, tried in
	// order; all the job's nodes satisfy the same one. Written by the Slurm API only.
	NodeAffinityChoicesAnnotation = "sluice.dev/node-affinity-choices"
	// PartitionsAnnotation on a Slurm job's PodGroup lists the partitions the job may run
	// in, comma-separated in order of preference (sbatch -p a,b); spec.partition is the
	// first until the job starts, then the one it runs in. Written by the Slurm API only.
	PartitionsAnnotation = "sluice.dev/partitions"
	// NodeConstraintAnnotation is what the user wrote for NodeAffinityAnnotation (e.g.
	// "--constraint=h100&ib --exclude=n3"), quoted when the job waits for it.
	NodeConstraintAnnotation = "sluice.dev/node-constraint"
	// FeatureLabelPrefix starts the node labels that are Slurm node features: a node
	// labelled sluice.dev/feature.ib has feature ib (sbatch --constraint=ib, sinfo).
	FeatureLabelPrefix = "sluice.dev/feature."
	// SwitchesAnnotation on a Slurm job's PodGroup is sbatch --switches=N: "1" keeps the
	// job inside one domain of its partition's innermost topology level (one leaf
	// switch); a larger N prefers that. Written by the Slurm API only.
	SwitchesAnnotation = "sluice.dev/switches"
	// SwitchesWaitAnnotation is --switches=N@MAX_TIME's wait, in seconds: once the job
	// has waited that long since submission, its switch count no longer applies.
	SwitchesWaitAnnotation = "sluice.dev/switches-wait"
	// TaskGroupAnnotation names the PodGroup member set a pod created for a
	// Slurm job belongs to, so its running task is matched back to it.
	TaskGroupAnnotation = "sluice.dev/task-group"

	// VisibleDevicesEnv is read by the NVIDIA container runtime to choose
	// the GPUs a container sees; the webhook points it at
	// VisibleDevicesAnnotation.
	VisibleDevicesEnv = "NVIDIA_VISIBLE_DEVICES"
	// GPUPortionEnv tells the workload which portion of each GPU it may
	// use; the webhook points it at GPUPortionAnnotation.
	GPUPortionEnv = "SLUICE_GPU_PORTION"

	// PodGroupConditionEvicted is set True on a PodGroup when the scheduler
	// evicted one of its pods; the reason is the eviction kind, the message
	// says for whom.
	PodGroupConditionEvicted = "Evicted"
	// PodGroupConditionEligible is written by the Slurm lifecycle on a
	// pending job with a --dependency: True once the dependency is met. The
	// scheduler keeps a job whose condition is False out of placement.
	PodGroupConditionEligible = "Eligible"
	// ReasonPodCreateFailed is the Scheduled condition's reason of a Slurm
	// PodGroup whose pods could not be made or created; the scheduler
	// retries on the next cycle.
	ReasonPodCreateFailed = "PodCreateFailed"

	// GPUFractionAnnotation asks for a fraction of a GPU, in (0,1) (KAI).
	GPUFractionAnnotation = "gpu-fraction"
	// GPUMemoryAnnotation asks for an amount of GPU memory in MiB (KAI).
	GPUMemoryAnnotation = "gpu-memory"
	// GPUFractionNumDevicesAnnotation asks for the fraction (or memory) on
	// that many devices (KAI).
	GPUFractionNumDevicesAnnotation = "gpu-fraction-num-devices"

	// NodeGPUsAnnotation is written on a node by the Sluice agent: per-GPU
	// index, UUID, memory and health. Without it the scheduler works from
	// the GPU Operator's labels below.
	NodeGPUsAnnotation = "sluice.dev/gpus"
	// QuarantineTaint keeps new work off a node whose GPUs are faulty.
	QuarantineTaint = "sluice.dev/quarantine"
	// GPUTaint (effect NoSchedule, no value) keeps GPU nodes for the pods Sluice schedules
	// when the webhook governs GPU pods (webhook.governGPUs): the server puts it on every
	// node with GPUs, the webhook gives Sluice's pods its toleration and refuses it to
	// anyone else's.
	GPUTaint = "sluice.dev/gpu"
	// SimDurationAnnotation and SimExitCodeAnnotation on a pod are read by
	// the rig's kwok stages (test/cluster) to end a simulated container after
	// that long with that code; real kubelets ignore them. Slurm jobs set
	// them from SLUICE_SIM_DURATION and SLUICE_SIM_EXIT_CODE.
	SimDurationAnnotation = "sluice.dev/sim-duration"
	SimExitCodeAnnotation = "sluice.dev/sim-exit-code"
	// SimMessageAnnotation is the termination message the rig's kwok
	// stages give the ended container, as a kubelet copies it from
	// /dev/termination-log; a Slurm job's batch host gets it from
	// SLUICE_SIM_TERMINATION_MESSAGE (a step report, slurmapi/launch).
	SimMessageAnnotation = "sluice.dev/sim-termination-message"
	// ValidationLabel marks the remediation controller's validation pods (value: the
	// node they validate); a drain leaves them alone.
	ValidationLabel = "sluice.dev/validation"
	// IdleValidationLabel marks a validation of an idle node (value: its partition):
	// the scheduler counts it as gone and deletes it the moment a job is placed on its
	// node (bridge.Node.Yielding), so it never delays a job. Sluice-owned: only the
	// remediation controller sets it.
	IdleValidationLabel = "sluice.dev/idle-validation"
	// NodeFaultAnnotation on a pod: the remediation controller drains it off faulty
	// hardware; the value is the fault. Set before the pod is evicted.
	NodeFaultAnnotation = "sluice.dev/node-fault"

	// GPUResource is the extended resource of whole NVIDIA GPUs.
	GPUResource = "nvidia.com/gpu"
	// GPUProductLabel, GPUMemoryLabel (MiB) and GPUCountLabel are published
	// on nodes by NVIDIA GPU feature discovery.
	GPUProductLabel = "nvidia.com/gpu.product"
	GPUMemoryLabel  = "nvidia.com/gpu.memory"
	GPUCountLabel   = "nvidia.com/gpu.count"
	// MIGStrategyLabel is the GPU Operator's MIG strategy; single or mixed
	// means the node's nvidia.com/gpu devices are MIG slices.
	MIGStrategyLabel = "nvidia.com/mig.strategy"
)

// SluicePrefix starts every label and annotation key Sluice reads or writes.
const SluicePrefix = "sluice.dev/"

// UserKeys are the sluice.dev/ labels and annotations a user may set when creating a pod
// or PodGroup: what it asks for (queue, partition, an explicit PodGroup, a reservation,
// the rig's simulated run time). The webhook checks a reservation's name against the
// namespace (webhook/reservations.go) as it checks the queue. Every other sluice.dev/ key is Sluice's own: the webhook removes
// it from a pod at admission, and the admission policy (webhook.Policy) refuses it on
// objects anyone but Sluice creates, and any change of a sluice.dev/ key afterwards.
var UserKeys = []string{QueueLabel, PartitionLabel, PodGroupAnnotation, SimDurationAnnotation, SimExitCodeAnnotation,
	TopologyRequiredAnnotation, TopologyPreferredAnnotation, ReservationAnnotation}

// ExclusiveAnnotation is not a user key: an exclusive job holds whole nodes but is
// charged only what it asks for, so a pod creator could fence off nodes for the price of
// one CPU. Only the Slurm API writes it (sbatch --exclusive), under the rights of the
// REST caller's account.

// OwnedKey reports whether a label or annotation key is Sluice's own (see UserKeys).
func OwnedKey(key string) bool {
	return strings.HasPrefix(key, SluicePrefix) && !slices.Contains(UserKeys, key)
}
