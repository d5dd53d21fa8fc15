package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// AllPartitions is the partition name of a quota entry that applies to every
// partition without an entry of its own.
const AllPartitions = "*"

// ResourceAmounts is an amount of each resource Sluice divides: GPUs (whole
// or fractional, e.g. "2" or "0.5"), CPU cores and memory. An unset field
// means "none stated", which each user of this type defines (no limit, zero).
type ResourceAmounts struct {
	// GPU is a number of GPUs; fractions such as "0.5" are allowed.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).startsWith('-')",message="gpu must not be negative"
	GPU *resource.Quantity `json:"gpu,omitempty"`
	// CPU is a number of cores, e.g. "64" or "500m".
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).startsWith('-')",message="cpu must not be negative"
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// Memory is a size in bytes, e.g. "512Gi".
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).startsWith('-')",message="memory must not be negative"
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// ResourceQuota is a queue's share of one resource in one partition, as KAI
// Scheduler and Slurm's fair-share tree describe it.
type ResourceQuota struct {
	// Quota is the deserved amount: what the queue gets whenever it asks,
	// reclaiming it from queues that are over their own quota if need be.
	// Unset means zero.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).startsWith('-')",message="quota must not be negative"
	Quota *resource.Quantity `json:"quota,omitempty"`
	// Limit caps what the queue may use, including over-quota work. Unset
	// means no cap; a limit below the quota caps the quota too.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).startsWith('-')",message="limit must not be negative"
	Limit *resource.Quantity `json:"limit,omitempty"`
	// OverQuotaWeight is the queue's relative weight when idle resources
	// beyond all quotas are shared out among the queues that want more.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	OverQuotaWeight *int32 `json:"overQuotaWeight,omitempty"`
}

// PartitionQuota is a queue's quota in one partition, or in every partition
// without an entry of its own when Partition is "*".
type PartitionQuota struct {
	// Partition names a Partition, or is "*" for all partitions.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$`
	Partition string `json:"partition"`
	// +optional
	GPU *ResourceQuota `json:"gpu,omitempty"`
	// +optional
	CPU *ResourceQuota `json:"cpu,omitempty"`
	// +optional
	Memory *ResourceQuota `json:"memory,omitempty"`
}
