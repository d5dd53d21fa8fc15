package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// PlacementStrategy says how a partition places pods on its nodes.
// +kubebuilder:validation:Enum=binpack;spread
type PlacementStrategy string

const (
	// PlacementBinpack fills the busiest nodes (and GPUs) first, keeping
	// whole nodes free for large gangs.
	PlacementBinpack PlacementStrategy = "binpack"
	// PlacementSpread prefers the emptiest nodes, spreading load and faults.
	PlacementSpread PlacementStrategy = "spread"
)

// PartitionSpec describes a node pool and the defaults and limits of jobs
// that run in it.
// +kubebuilder:validation:XValidation:rule="!has(self.defaultTime) || !has(self.maxTime) || duration(self.defaultTime) <= duration(self.maxTime)",message="defaultTime must not exceed maxTime"
type PartitionSpec struct {
	// NodeSelector picks the partition's nodes by label, e.g.
	// sluice.dev/partition: h100. A node may belong to several partitions.
	// +kubebuilder:validation:MinProperties=1
	NodeSelector map[string]string `json:"nodeSelector"`
	// GPUModel is the GPU model of the partition's nodes, e.g. H100-80GB,
	// shown by sinfo.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	GPUModel string `json:"gpuModel,omitempty"`
	// GPUDeviceClass says the partition's nodes publish their GPUs through Dynamic
	// Resource Allocation, as devices of this DeviceClass (NVIDIA's DRA driver:
	// gpu.nvidia.com): a Slurm job's GPUs (--gres=gpu:N, --gpus-per-node) are then
	// claimed from it, a ResourceClaim per pod, rather than asked of a device plugin.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	GPUDeviceClass string `json:"gpuDeviceClass,omitempty"`
	// Placement is binpack (the default) or spread.
	// +optional
	// +kubebuilder:default=binpack
	Placement PlacementStrategy `json:"placement,omitempty"`
	// Topology lists the partition's topology levels, outermost first, each a
	// node label key (e.g. topology.kubernetes.io/zone, sluice.dev/block,
	// sluice.dev/rack). A gang's preferred placement falls back outwards along
	// it; sbatch --switches uses its last (innermost) level.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=317
	Topology []string `json:"topology,omitempty"`
	// DefaultImage is the container image of Slurm jobs that name none.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	DefaultImage string `json:"defaultImage,omitempty"`
	// DefaultTime is the time limit of jobs that state none.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	DefaultTime *metav1.Duration `json:"defaultTime,omitempty"`
	// MaxTime is the longest time limit a job may ask for; unset means none.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	MaxTime *metav1.Duration `json:"maxTime,omitempty"`
	// AllowedAccounts names the Queues that may submit here; empty means all.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MaxLength=63
	AllowedAccounts []string `json:"allowedAccounts,omitempty"`
	// AllowedQOS names the QOS jobs here may use; empty means all.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	AllowedQOS []string `json:"allowedQOS,omitempty"`
	// PriorityTier orders partitions that share nodes: jobs of a higher
	// tier are scheduled first and may preempt lower tiers' jobs.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	PriorityTier int32 `json:"priorityTier,omitempty"`
	// Default marks the partition of Slurm jobs that name none. At most one
	// partition should be the default; if several are, the first by name wins.
	// +optional
	Default bool `json:"default,omitempty"`
}

// PartitionStatus is written by the scheduler.
type PartitionStatus struct {
	// Nodes is how many nodes match the selector; Schedulable how many of
	// them accept work (not cordoned, not quarantined).
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// +optional
	SchedulableNodes int32 `json:"schedulableNodes,omitempty"`
	// Capacity and Allocated are summed over the partition's nodes.
	// +optional
	Capacity ResourceAmounts `json:"capacity,omitempty"`
	// +optional
	Allocated ResourceAmounts `json:"allocated,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Partition is a Slurm partition: a pool of nodes with its own defaults,
// limits and placement strategy. Fair share is computed per partition.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=part,categories=sluice
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="GPU-Model",type=string,JSONPath=`.spec.gpuModel`
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.spec.placement`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="GPUs",type=string,JSONPath=`.status.capacity.gpu`
// +kubebuilder:printcolumn:name="Allocated",type=string,JSONPath=`.status.allocated.gpu`
// +kubebuilder:printcolumn:name="Max-Time",type=string,JSONPath=`.spec.maxTime`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Partition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PartitionSpec `json:"spec"`
	// +optional
	Status PartitionStatus `json:"status,omitempty"`
}

// PartitionList is a list of Partitions.
//
// +kubebuilder:object:root=true
type PartitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Partition `json:"items"`
}

func init() {
	register(&Partition{}, &PartitionList{})
}
