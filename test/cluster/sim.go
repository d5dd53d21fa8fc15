package cluster

import (
	"time"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Pod annotations the rig's kwok stages read to simulate a container's run.
const (
	// AnnotationSimDuration is how long the simulated container runs once the
	// pod is Running, as a Go duration ("30s"). Without it the pod runs until
	// deleted, which is how a test makes a job hit its time limit.
	AnnotationSimDuration = v1alpha1.SimDurationAnnotation
	// AnnotationSimExitCode is the exit code the container ends with after
	// AnnotationSimDuration: 0 (the default) gives phase Succeeded, anything
	// else phase Failed, with the code in the container's terminated state.
	AnnotationSimExitCode = v1alpha1.SimExitCodeAnnotation
)

// SimulatedRun returns the pod annotations that make the rig's kwok end a pod's
// container after d with exitCode. Merge them into a pod (template)'s
// annotations; typed arguments avoid hand-written values kwok cannot parse.
func SimulatedRun(d time.Duration, exitCode int) map[string]string {
	return map[string]string{
		AnnotationSimDuration: v1alpha1.FormatSimDuration(d),
		AnnotationSimExitCode: v1alpha1.FormatSimExitCode(exitCode),
	}
}
