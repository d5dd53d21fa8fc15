package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReservationFlag is one of Slurm's reservation flags that Sluice honours.
// +kubebuilder:validation:Enum=MAINT;IGNORE_JOBS;FLEX;DAILY;WEEKLY;PURGE_COMP;MAGNETIC;ANY_NODES;PART_NODES
type ReservationFlag string

// Reservation flags, as scontrol spells them.
const (
	// ReservationMaint marks a maintenance window: its nodes show MAINT, jobs kept off them
	// wait with "ReqNodeNotAvail, Reserved for maintenance", and sreport counts its time as
	// planned down.
	ReservationMaint ReservationFlag = "MAINT"
	// ReservationIgnoreJobs creates the reservation even where running jobs would still hold
	// its nodes when it starts.
	ReservationIgnoreJobs ReservationFlag = "IGNORE_JOBS"
	// ReservationFlex lets its jobs start before it, run past its end and use other nodes too.
	ReservationFlex ReservationFlag = "FLEX"
	// ReservationDaily and ReservationWeekly repeat the window every day or week: when one
	// ends, the next begins a day (a week) after it began.
	ReservationDaily  ReservationFlag = "DAILY"
	ReservationWeekly ReservationFlag = "WEEKLY"
	// ReservationPurgeComp deletes the reservation once its last job ends.
	ReservationPurgeComp ReservationFlag = "PURGE_COMP"
	// ReservationMagnetic draws in jobs it admits without their naming it.
	ReservationMagnetic ReservationFlag = "MAGNETIC"
	// ReservationAnyNodes lets a reservation of a node count take nodes of any partition.
	ReservationAnyNodes ReservationFlag = "ANY_NODES"
	// ReservationPartNodes reserves every node of its partition, as they come and go.
	ReservationPartNodes ReservationFlag = "PART_NODES"
)

// ReservationSpec books nodes for a window of time, as `scontrol create reservation` does.
//
// +kubebuilder:validation:XValidation:rule="has(self.endTime) != has(self.duration)",message="set exactly one of endTime and duration"
// +kubebuilder:validation:XValidation:rule="has(self.nodes) || has(self.nodeCount) || has(self.partition)",message="set nodes, nodeCount or partition (with PART_NODES)"
// +kubebuilder:validation:XValidation:rule="has(self.users) || has(self.accounts) || has(self.namespaces)",message="set users, accounts or namespaces: who may use the reservation"
type ReservationSpec struct {
	// StartTime is when the window opens.
	StartTime metav1.Time `json:"startTime"`
	// EndTime is when it closes; set this or duration.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// Duration is how long it lasts; set this or endTime.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	Duration *metav1.Duration `json:"duration,omitempty"`
	// Nodes names the reserved nodes.
	// +optional
	// +kubebuilder:validation:MaxItems=10000
	// +kubebuilder:validation:items:MaxLength=253
	Nodes []string `json:"nodes,omitempty"`
	// NodeCount reserves that many nodes of Partition (any partition with ANY_NODES), chosen
	// when the reservation is created: idle ones first, then those whose jobs end first.
	// +optional
	// +kubebuilder:validation:Minimum=1
	NodeCount *int32 `json:"nodeCount,omitempty"`
	// Partition is the Sluice partition the nodes come from (with nodeCount or PART_NODES).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Partition string `json:"partition,omitempty"`
	// Users may run jobs in it (Slurm user names, as the Slurm API maps them).
	// +optional
	// +kubebuilder:validation:MaxItems=1024
	Users []string `json:"users,omitempty"`
	// Accounts are the queues (Slurm accounts) whose jobs may run in it.
	// +optional
	// +kubebuilder:validation:MaxItems=1024
	Accounts []string `json:"accounts,omitempty"`
	// Namespaces whose workloads may run in it.
	// +optional
	// +kubebuilder:validation:MaxItems=1024
	Namespaces []string `json:"namespaces,omitempty"`
	// Flags are Slurm's reservation flags Sluice honours.
	// +optional
	// +listType=set
	Flags []ReservationFlag `json:"flags,omitempty"`
}

// ReservationState is where a reservation is in its life.
// +kubebuilder:validation:Enum=Inactive;Active;Ended
type ReservationState string

// Reservation states.
const (
	ReservationInactive ReservationState = "Inactive" // before its window
	ReservationActive   ReservationState = "Active"   // inside it
	ReservationEnded    ReservationState = "Ended"    // after it (a repeating one moves on)
)

// ReservationStatus is what the reservation holds now.
type ReservationStatus struct {
	// State is Inactive, Active or Ended.
	// +optional
	State ReservationState `json:"state,omitempty"`
	// Nodes are the nodes it holds: spec.nodes, or those chosen for nodeCount or the
	// partition's for PART_NODES.
	// +optional
	Nodes []string `json:"nodes,omitempty"`
	// StartTime and EndTime are the current window (a DAILY or WEEKLY one moves on).
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// Conditions: Ready (its nodes are resolved), with a reason when they are not.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Reservation books nodes for a window of time for some users, accounts or namespaces, for
// Slurm jobs and Kubernetes workloads alike (Slurm's advance reservation).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=resv,categories=sluice
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Start",type=string,JSONPath=`.status.startTime`
// +kubebuilder:printcolumn:name="End",type=string,JSONPath=`.status.endTime`
// +kubebuilder:printcolumn:name="Nodes",type=string,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="Flags",type=string,JSONPath=`.spec.flags`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Reservation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ReservationSpec `json:"spec"`
	// +optional
	Status ReservationStatus `json:"status,omitempty"`
}

// ReservationList is a list of Reservations.
//
// +kubebuilder:object:root=true
type ReservationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Reservation `json:"items"`
}

func init() {
	register(&Reservation{}, &ReservationList{})
}

// ReservationAnnotation (or label) on a pod, its owner or a PodGroup names the reservation
// its job runs in (sbatch --reservation).
const ReservationAnnotation = "sluice.dev/reservation"

// HasFlag reports whether the reservation has flag f.
func (r *Reservation) HasFlag(f ReservationFlag) bool {
	for _, g := range r.Spec.Flags {
		if g == f {
			return true
		}
	}
	return false
}

// Window is the reservation's current window: the status's where the controller has moved
// a repeating one on, else the spec's.
func (r *Reservation) Window() (start, end metav1.Time) {
	if r.Status.StartTime != nil && r.Status.EndTime != nil {
		return *r.Status.StartTime, *r.Status.EndTime
	}
	start = r.Spec.StartTime
	switch {
	case r.Spec.EndTime != nil:
		end = *r.Spec.EndTime
	case r.Spec.Duration != nil:
		end = metav1.NewTime(start.Add(r.Spec.Duration.Duration))
	default:
		end = start
	}
	return start, end
}
