package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// QueueSpec places a queue (a Slurm account) in the tree and states its
// quotas.
//
// +kubebuilder:validation:XValidation:rule="!has(self.defaultQOS) || !has(self.qos) || self.defaultQOS in self.qos",message="defaultQOS must be one of qos"
type QueueSpec struct {
	// ParentQueue names the parent Queue; empty for a top-level queue.
	// Jobs are submitted only to leaf queues.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ParentQueue string `json:"parentQueue,omitempty"`
	// Priority orders sibling queues: a higher-priority queue's jobs are
	// considered first and its over-quota work is reclaimed last.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	Priority int32 `json:"priority,omitempty"`
	// Quotas holds one entry per partition, plus optionally "*" for every
	// partition without an entry of its own. At most 16 entries: the API
	// server bounds the cost of validating each entry's quantities.
	// +optional
	// +listType=map
	// +listMapKey=partition
	// +kubebuilder:validation:MaxItems=16
	Quotas []PartitionQuota `json:"quotas,omitempty"`
	// Users may submit Slurm jobs to this queue (Slurm's user-account
	// association). A user listed on exactly one queue has it as default
	// account. Empty means no user may submit Slurm jobs to it, as a Slurm
	// account without associations takes none.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:MinLength=1
	Users []string `json:"users,omitempty"`
	// QOS lists the QOS this account's jobs may use (Slurm's association
	// QOS). Empty means the parent queue's list, and a top-level queue
	// without one allows every QOS.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:MinLength=1
	QOS []string `json:"qos,omitempty"`
	// DefaultQOS is the QOS of jobs that name none (Slurm's DefaultQOS);
	// it must be in QOS. Empty means the parent's, else the first of the
	// list, else the QOS named normal.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	DefaultQOS string `json:"defaultQOS,omitempty"`
	// MaxSubmitJobs caps how many jobs each of the queue's users may have
	// pending or running in it at once; a submission past it is refused
	// (Slurm's association MaxSubmitJobs). Each array task counts.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxSubmitJobs *int32 `json:"maxSubmitJobs,omitempty"`
	// NamespaceSelector picks the namespaces whose pods and PodGroups may use
	// this queue, as Kueue's ClusterQueue does: {} admits every namespace;
	// unset admits none, so a queue nobody opened is never charged by a pod
	// that merely names it. The queue's Slurm namespace (slurm-<queue>, where
	// the REST API puts the jobs of this account after checking the user's
	// association) may always use it.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// PreemptMinRuntime protects this queue's jobs from preemption by
	// higher-priority jobs of the same queue until they ran this long.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	PreemptMinRuntime *metav1.Duration `json:"preemptMinRuntime,omitempty"`
	// ReclaimMinRuntime protects this queue's over-quota jobs from being
	// reclaimed by other queues until they ran this long.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	ReclaimMinRuntime *metav1.Duration `json:"reclaimMinRuntime,omitempty"`
}

// QueuePartitionStatus is what a queue holds, asks for and deserves in one
// partition.
type QueuePartitionStatus struct {
	Partition string `json:"partition"`
	// +optional
	Allocated ResourceAmounts `json:"allocated,omitempty"`
	// +optional
	Requested ResourceAmounts `json:"requested,omitempty"`
	// +optional
	FairShare ResourceAmounts `json:"fairShare,omitempty"`
}

// QueueStatus is written by the scheduler after each cycle that changed it.
type QueueStatus struct {
	// Allocated, Requested and FairShare are the sums over all partitions;
	// Partitions has them per partition.
	// +optional
	Allocated ResourceAmounts `json:"allocated,omitempty"`
	// +optional
	Requested ResourceAmounts `json:"requested,omitempty"`
	// +optional
	FairShare ResourceAmounts `json:"fairShare,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=partition
	// +kubebuilder:validation:MaxItems=16
	Partitions []QueuePartitionStatus `json:"partitions,omitempty"`
	// Conditions include Valid (False with a reason when, for example, the
	// parent queue does not exist).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Queue is a node of the fair-share tree: a Slurm account, a KAI queue.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=sq,categories=sluice
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parentQueue`
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="GPUs",type=string,JSONPath=`.status.allocated.gpu`,description="GPUs allocated, all partitions"
// +kubebuilder:printcolumn:name="Fair-Share",type=string,JSONPath=`.status.fairShare.gpu`,description="GPUs deserved now, all partitions"
// +kubebuilder:printcolumn:name="Requested",type=string,JSONPath=`.status.requested.gpu`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec QueueSpec `json:"spec,omitempty"`
	// +optional
	Status QueueStatus `json:"status,omitempty"`
}

// QueueList is a list of Queues.
//
// +kubebuilder:object:root=true
type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Queue `json:"items"`
}

func init() {
	register(&Queue{}, &QueueList{})
}
