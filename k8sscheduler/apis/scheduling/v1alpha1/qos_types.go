package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PreemptMode says what happens to a job when it is preempted.
// +kubebuilder:validation:Enum=requeue;cancel
type PreemptMode string

const (
	// PreemptRequeue puts a preempted job back in the queue.
	PreemptRequeue PreemptMode = "requeue"
	// PreemptCancel ends a preempted job for good.
	PreemptCancel PreemptMode = "cancel"
)

// QOSLimits are Slurm's QOS limits. Unset means unlimited.
type QOSLimits struct {
	// MaxTRESPerUser caps what one user's running jobs hold at once
	// (Slurm MaxTRESPerUser; its gpu field is "max GPUs per user").
	// +optional
	MaxTRESPerUser *ResourceAmounts `json:"maxTRESPerUser,omitempty"`
	// GrpTRES caps what all running jobs of this QOS hold together.
	// +optional
	GrpTRES *ResourceAmounts `json:"grpTRES,omitempty"`
	// MaxWall is the longest time limit a job of this QOS may have.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	MaxWall *metav1.Duration `json:"maxWall,omitempty"`
	// MaxJobsPerUser caps how many jobs of one user run at once.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxJobsPerUser *int32 `json:"maxJobsPerUser,omitempty"`
	// MaxSubmitJobsPerUser caps how many jobs of one user with this QOS
	// may be pending or running at once; a submission past it is refused
	// (Slurm MaxSubmitJobsPerUser). Each array task counts.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxSubmitJobsPerUser *int32 `json:"maxSubmitJobsPerUser,omitempty"`
}

// QOSSpec is a Slurm quality of service.
type QOSSpec struct {
	// Priority is added to the priority of every job using this QOS.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	Priority int32 `json:"priority,omitempty"`
	// Preemptible jobs may be evicted for higher-priority work and may run
	// over their queue's quota; non-preemptible jobs must fit in quota.
	// +optional
	Preemptible bool `json:"preemptible,omitempty"`
	// PreemptMode is requeue (the default) or cancel.
	// +optional
	// +kubebuilder:default=requeue
	PreemptMode PreemptMode `json:"preemptMode,omitempty"`
	// UsageFactor scales the usage charged to fair share, e.g. "0.5" for
	// half price; unset means 1.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).startsWith('-')",message="usageFactor must not be negative"
	UsageFactor *resource.Quantity `json:"usageFactor,omitempty"`
	// +optional
	Limits QOSLimits `json:"limits,omitempty"`
}

// QOS is a Slurm quality of service: a job's priority boost,
// preemptibility and limits.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,path=qoses,singular=qos,categories=sluice
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Preemptible",type=boolean,JSONPath=`.spec.preemptible`
// +kubebuilder:printcolumn:name="Preempt-Mode",type=string,JSONPath=`.spec.preemptMode`
// +kubebuilder:printcolumn:name="Usage-Factor",type=string,JSONPath=`.spec.usageFactor`,priority=1
// +kubebuilder:printcolumn:name="Max-Wall",type=string,JSONPath=`.spec.limits.maxWall`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type QOS struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec QOSSpec `json:"spec,omitempty"`
}

// QOSList is a list of QOS.
//
// +kubebuilder:object:root=true
type QOSList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []QOS `json:"items"`
}

func init() {
	register(&QOS{}, &QOSList{})
}
