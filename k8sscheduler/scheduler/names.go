package scheduler

import (
	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// ReasonWaitingForPods is the Scheduled condition's reason while a PodGroup has fewer pods
// than its minMember, so the gang cannot be considered yet.
const ReasonWaitingForPods = "WaitingForPods"

// ReasonNoPodFactory is the Scheduled condition's reason of a pod-less (Slurm) PodGroup when
// the scheduler was built without a PodFactory.
const ReasonNoPodFactory = "NoPodFactory"

// ReasonInvalidAccount is the Scheduled condition's reason (squeue's, as Slurm names a job
// whose account it may not use) of a group whose namespace its queue does not admit
// (the Queue's spec.namespaceSelector).
const ReasonInvalidAccount = "InvalidAccount"

// assignmentOf turns a bind into its assignment (v1alpha1.GPUAssignment, which the binder
// writes with v1alpha1.VisibleDevicesAnnotation and v1alpha1.GPUPortionAnnotation on a pod
// through its Binding: kube-apiserver copies a Binding's annotations onto the pod in the
// same write; the webhook points container environment variables at the latter two with
// fieldRef, so a real kubelet resolves them at start); ok is false for a bind without GPUs.
func assignmentOf(b *bridge.Bind) (v1alpha1.GPUAssignment, bool) {
	if len(b.GPUs) == 0 {
		return v1alpha1.GPUAssignment{}, false
	}
	a := v1alpha1.GPUAssignment{GPUs: make([]v1alpha1.AssignedGPU, len(b.GPUs)), Portion: float64(b.GPUMilli) / 1000, GPUMemoryMiB: b.GPUMemoryMiB}
	if b.GPUMilli == 0 {
		a.Portion = 1
	}
	for i, g := range b.GPUs {
		a.GPUs[i] = v1alpha1.AssignedGPU{Index: g.Index, UUID: g.UUID}
	}
	return a, true
}

// assignmentAnnotations renders the assignment as the three pod annotations (and MPS's).
func assignmentAnnotations(a v1alpha1.GPUAssignment) map[string]string {
	out := map[string]string{
		v1alpha1.GPUAssignmentAnnotation:  a.Encode(),
		v1alpha1.VisibleDevicesAnnotation: v1alpha1.FormatVisibleDevices(a.DeviceIDs()),
		v1alpha1.GPUPortionAnnotation:     v1alpha1.FormatGPUPortion(a.Portion),
	}
	for k, v := range mpsLimits(a) {
		out[k] = v
	}
	return out
}
