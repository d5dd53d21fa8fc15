// Package v1alpha1 holds Sluice's scheduling API, group scheduling.sluice.dev:
// Queue (the account tree and its quotas), PodGroup (one gang, which is also
// how a Slurm job is stored), Partition (a node pool) and QOS (priority,
// preemption and limits), plus the label and annotation names shared by every
// Sluice component.
//
// +kubebuilder:object:generate=true
// +groupName=scheduling.sluice.dev
package v1alpha1
