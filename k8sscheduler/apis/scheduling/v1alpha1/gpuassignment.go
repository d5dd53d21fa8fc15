package v1alpha1

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// GPUAssignment is the JSON of GPUAssignmentAnnotation, the one form every reader and
// writer uses: the binder writes it (with VisibleDevicesAnnotation and
// GPUPortionAnnotation) through the pod's Binding, the remediation controller reads it to
// evict only the pods on a faulty GPU, and the ledger to count the GPUs a pod held.
type GPUAssignment struct {
	GPUs []AssignedGPU `json:"gpus"`
	// Portion is the share of each device: 1 for whole devices, 0 for a GPU reservation's
	// slot (the device is shared, not used).
	Portion float64 `json:"portion"`
	// GPUMemoryMiB is the memory granted on each device, 0 when unstated.
	GPUMemoryMiB int64 `json:"gpuMemoryMiB,omitempty"`
	// MPS is set for a shared GPU on a node running an MPS control daemon (MPSLabel): the
	// portion and memory are then limits.
	MPS bool `json:"mps,omitempty"`
}

// AssignedGPU is one device of a GPUAssignment: its index on the node and, where the node
// publishes them, its UUID.
type AssignedGPU struct {
	Index int32  `json:"index"`
	UUID  string `json:"uuid,omitempty"`
}

// Encode is the annotation's value.
func (a GPUAssignment) Encode() string {
	raw, _ := json.Marshal(a) // plain values: cannot fail
	return string(raw)
}

// ParseGPUAssignment reads an annotation value back, refusing a portion outside [0,1].
func ParseGPUAssignment(s string) (GPUAssignment, error) {
	var a GPUAssignment
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return a, fmt.Errorf("annotation %s: %w", GPUAssignmentAnnotation, err)
	}
	if a.Portion < 0 || a.Portion > 1 {
		return a, fmt.Errorf("annotation %s: portion %v is not in [0,1]", GPUAssignmentAnnotation, a.Portion)
	}
	return a, nil
}

// GPUAssignmentOf reads a pod's assignment from its annotations; ok is false when it has
// none (it holds no GPU, or is not placed yet).
func GPUAssignmentOf(annotations map[string]string) (a GPUAssignment, ok bool, err error) {
	raw, ok := annotations[GPUAssignmentAnnotation]
	if !ok {
		return a, false, nil
	}
	a, err = ParseGPUAssignment(raw)
	return a, true, err
}

// ClaimedGPUs is how many GPUs a pod holds through resource claims (DRA), which it
// asks no nvidia.com/gpu for: those its GPU assignment names (the scheduler writes it as
// it binds the pod). 0 for a pod without claims or not bound yet.
func ClaimedGPUs(pod *corev1.Pod) float64 {
	if len(pod.Spec.ResourceClaims) == 0 {
		return 0
	}
	a, err := ParseGPUAssignment(pod.Annotations[GPUAssignmentAnnotation])
	if err != nil {
		return 0
	}
	return float64(len(a.GPUs)) * a.Portion
}
