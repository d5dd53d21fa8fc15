package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Preemptibility says whether a gang may be evicted for other work.
// +kubebuilder:validation:Enum=preemptible;non-preemptible
type Preemptibility string

const (
	// Preemptible gangs may run over quota and be evicted to make room.
	Preemptible Preemptibility = "preemptible"
	// NonPreemptible gangs must fit in their queue's quota and are never
	// evicted for other work.
	NonPreemptible Preemptibility = "non-preemptible"
)

// PodGroupSpec is one gang: the pods that start together or not at all.
type PodGroupSpec struct {
	// MinMember is how many of the group's pods must be placeable at once
	// before any of them is bound; unset means 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	MinMember int32 `json:"minMember,omitempty"`
	// Queue names the Queue (Slurm account) the group is charged to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Queue string `json:"queue"`
	// Partition names the Partition to run in; empty means any node the
	// pods' own selectors allow.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Partition string `json:"partition,omitempty"`
	// QOS names the QOS; empty means the queue's default behaviour.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	QOS string `json:"qos,omitempty"`
	// PriorityClassName orders the group within its queue.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// Preemptibility overrides what the QOS or priority class implies.
	// +optional
	Preemptibility Preemptibility `json:"preemptibility,omitempty"`
	// StaleGracePeriod is how long a running group may have fewer than
	// MinMember running pods before the scheduler evicts the rest of it.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	StaleGracePeriod *metav1.Duration `json:"staleGracePeriod,omitempty"`
	// Members describes the group's pods before they exist, so the
	// scheduler can place a gang from the PodGroup alone. A Slurm job is
	// stored with Members and no pods until it starts; a manifest
	// workload's pods exist and Members may stay empty.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Members []MemberSet `json:"members,omitempty"`
	// Slurm is set on groups submitted through the Slurm REST API.
	// +optional
	Slurm *SlurmJob `json:"slurm,omitempty"`
}

// MemberSet is Count identical pods of a gang: a Slurm job's nodes, or one
// role (launcher, worker) of a distributed job.
type MemberSet struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`
	// Resources is what each pod requests: cpu, memory, nvidia.com/gpu.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// GPUSharing asks for part of a shared GPU instead of whole GPUs.
	// +optional
	GPUSharing *GPUSharing `json:"gpuSharing,omitempty"`
}

// GPUSharing is a request for a fraction of a GPU, the KAI way: either a
// fraction of each device or an amount of its memory.
// +kubebuilder:validation:XValidation:rule="has(self.fraction) != has(self.memory)",message="exactly one of fraction and memory must be set"
type GPUSharing struct {
	// Fraction of each device, strictly between 0 and 1, e.g. "0.25".
	// +optional
	// +kubebuilder:validation:Pattern=`^0?\.0*[1-9][0-9]*$`
	// +kubebuilder:validation:MaxLength=16
	Fraction string `json:"fraction,omitempty"`
	// Memory of each device, e.g. "20Gi".
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).startsWith('-')",message="memory must not be negative"
	Memory *resource.Quantity `json:"memory,omitempty"`
	// Devices is how many devices the pod gets a share of.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	Devices int32 `json:"devices,omitempty"`
}

// PodGroupPhase is where a group is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Cancelled;TimedOut;Preempted
type PodGroupPhase string

const (
	PodGroupPending   PodGroupPhase = "Pending"
	PodGroupRunning   PodGroupPhase = "Running"
	PodGroupSucceeded PodGroupPhase = "Succeeded"
	PodGroupFailed    PodGroupPhase = "Failed"
	PodGroupCancelled PodGroupPhase = "Cancelled"
	PodGroupTimedOut  PodGroupPhase = "TimedOut"
	// PodGroupPreempted is final: the group was preempted with preempt
	// mode cancel. A requeued group goes back to Pending instead.
	PodGroupPreempted PodGroupPhase = "Preempted"
)

// PodGroupConditionScheduled is False with the why-pending reason and
// message while the group waits, True once all MinMember pods are bound.
const PodGroupConditionScheduled = "Scheduled"

// PodGroupStatus is written by the scheduler (and, for Slurm jobs, by the
// Slurm API as the job ends).
type PodGroupStatus struct {
	// +optional
	Phase PodGroupPhase `json:"phase,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// StartTime is when the group was bound; EndTime when it finished.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// Nodes the group's pods were bound to, in member order.
	// +optional
	Nodes []string `json:"nodes,omitempty"`
	// Running, Succeeded and Failed count the group's pods.
	// +optional
	Running int32 `json:"running,omitempty"`
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// ExitCode of a finished Slurm job (its first failing task, else 0).
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`
	// Requeues counts how often the group was requeued after preemption
	// or a node failure.
	// +optional
	Requeues int32 `json:"requeues,omitempty"`
	// LastRequeueTime is when the group was last requeued. With Requeues it lets every
	// reader (the ledger above all) see each requeue with its time, however late it looks.
	// +optional
	LastRequeueTime *metav1.Time `json:"lastRequeueTime,omitempty"`
	// EndReason is why a failed Slurm job failed, as Kubernetes names it on its first
	// failed task (OOMKilled, DeadlineExceeded, Error) or NodeFail for a job lost with its
	// node: the job's pods go when it ends, so the reason is kept here.
	// +optional
	EndReason string `json:"endReason,omitempty"`
	// State is the job's Slurm state as squeue shows it (PENDING, RUNNING, COMPLETING,
	// COMPLETED, FAILED, CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL, OUT_OF_MEMORY), from
	// the one job read model (k8sscheduler/apis/jobstate) over the group and its pods.
	// Written by the accounting recorder alone, for kubectl's columns; views derive it
	// themselves from the objects and never read it back.
	// +optional
	State string `json:"state,omitempty"`
	// Reason is Slurm's reason for State: why a pending job waits (Resources,
	// Priority, Dependency, ...), or how it ended (NonZeroExitCode, TimeLimit, ...).
	// Written with State.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// PodGroup is a gang of pods scheduled all together, charged to a queue. It
// is also how Sluice stores a Slurm job.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=pg,categories=sluice
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Queue",type=string,JSONPath=`.spec.queue`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Min",type=integer,JSONPath=`.spec.minMember`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.running`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Job-ID",type=string,JSONPath=`.metadata.labels.sluice\.dev/job-id`,priority=1
// +kubebuilder:printcolumn:name="Partition",type=string,JSONPath=`.spec.partition`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PodGroupSpec `json:"spec"`
	// +optional
	Status PodGroupStatus `json:"status,omitempty"`
}

// PodGroupList is a list of PodGroups.
//
// +kubebuilder:object:root=true
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGroup `json:"items"`
}

func init() {
	register(&PodGroup{}, &PodGroupList{})
}
