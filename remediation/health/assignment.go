package health

import "github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"

// AssignmentUses reports whether a pod's GPU assignment (v1alpha1.GPUAssignment, read from
// its v1alpha1.GPUAssignmentAnnotation) includes any of the given GPUs, so the remediation
// controller evicts only the pods on a faulty GPU. A GPU matches by UUID when both sides
// have one, else by index.
func AssignmentUses(a v1alpha1.GPUAssignment, gpus []GPUInfo) bool {
	for _, mine := range a.GPUs {
		for _, g := range gpus {
			if mine.UUID != "" && g.UUID != "" {
				if mine.UUID == g.UUID {
					return true
				}
			} else if mine.Index == g.Index {
				return true
			}
		}
	}
	return false
}
