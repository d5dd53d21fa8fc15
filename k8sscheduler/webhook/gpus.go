package webhook

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// checkGPURequest validates a pod's KAI-compatible GPU-sharing annotations
// against each other and against its nvidia.com/gpu resources. It reports
// whether the pod asks for a share of a GPU and, for a bad request, one
// message naming every offending annotation and its allowed range, so a user
// fixes the manifest in one go.
func checkGPURequest(pod *corev1.Pod) (shared bool, problem string) {
	ann := pod.Annotations
	fraction, hasFraction := ann[v1alpha1.GPUFractionAnnotation]
	memory, hasMemory := ann[v1alpha1.GPUMemoryAnnotation]
	devices, hasDevices := ann[v1alpha1.GPUFractionNumDevicesAnnotation]
	wholeIn := containerRequestingWholeGPUs(pod)

	var problems []string
	if hasFraction {
		if f, err := strconv.ParseFloat(fraction, 64); err != nil || !(f > 0 && f < 1) {
			problems = append(problems, fmt.Sprintf(
				"annotation %s=%q: must be a number in the open range (0,1), such as \"0.25\"; for whole GPUs request %s instead",
				v1alpha1.GPUFractionAnnotation, fraction, v1alpha1.GPUResource))
		}
	}
	if hasMemory {
		if n, err := strconv.ParseInt(memory, 10, 64); err != nil || n <= 0 {
			problems = append(problems, fmt.Sprintf(
				"annotation %s=%q: must be a positive whole number of MiB (1 or more), such as \"20480\"",
				v1alpha1.GPUMemoryAnnotation, memory))
		}
	}
	if hasDevices {
		if n, err := strconv.ParseInt(devices, 10, 32); err != nil || n <= 0 {
			problems = append(problems, fmt.Sprintf(
				"annotation %s=%q: must be a positive whole number of GPUs (1 or more), such as \"2\"",
				v1alpha1.GPUFractionNumDevicesAnnotation, devices))
		}
		if !hasFraction {
			problems = append(problems, fmt.Sprintf(
				"annotation %s is only allowed together with %s (the fraction to take on each device)",
				v1alpha1.GPUFractionNumDevicesAnnotation, v1alpha1.GPUFractionAnnotation))
		}
	}
	if hasFraction && hasMemory {
		problems = append(problems, fmt.Sprintf(
			"annotations %s and %s both ask for a shared GPU: set one, not both",
			v1alpha1.GPUFractionAnnotation, v1alpha1.GPUMemoryAnnotation))
	}
	shared = hasFraction || hasMemory
	if shared && wholeIn != "" {
		name := v1alpha1.GPUFractionAnnotation
		if !hasFraction {
			name = v1alpha1.GPUMemoryAnnotation
		}
		problems = append(problems, fmt.Sprintf(
			"annotation %s asks for part of a shared GPU but container %q also requests %s (whole GPUs): use one or the other",
			name, wholeIn, v1alpha1.GPUResource))
	}
	return shared, strings.Join(problems, "; ")
}

// containerRequestingWholeGPUs names the first container (init or regular)
// with a non-zero nvidia.com/gpu request or limit, or "" when none has one.
func containerRequestingWholeGPUs(pod *corev1.Pod) string {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, res := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				if q, ok := res[v1alpha1.GPUResource]; ok && !q.IsZero() {
					return c.Name
				}
			}
		}
	}
	return ""
}
