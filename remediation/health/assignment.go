package health

import (
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// GPUAssignmentAnnotation on a pod names the GPUs the scheduler placed it on, as JSON
// {"gpus":[{"index":0,"uuid":"GPU-..."}],"portion":0.5}. The remediation controller reads it
// to evict only the pods on a faulty GPU.
const GPUAssignmentAnnotation = v1alpha1.GPUAssignmentAnnotation

// GPUAssignment is the value of the GPUAssignmentAnnotation.
type GPUAssignment struct {
	GPUs []AssignedGPU `json:"gpus"`
	// Portion is the share of each GPU for a fractional pod (0 < p < 1); 0 or 1 is whole GPUs.
	Portion float64 `json:"portion,omitempty"`
}

// AssignedGPU identifies one GPU of an assignment.
type AssignedGPU struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid,omitempty"`
}

// ParseGPUAssignment reads a pod's GPU assignment from its annotations. ok is false when
// the pod has none (it holds no GPU, or the scheduler has not placed it).
func ParseGPUAssignment(annotations map[string]string) (a GPUAssignment, ok bool, err error) {
	v, ok := annotations[GPUAssignmentAnnotation]
	if !ok {
		return a, false, nil
	}
	if err := json.Unmarshal([]byte(v), &a); err != nil {
		return a, true, fmt.Errorf("annotation %s: %w", GPUAssignmentAnnotation, err)
	}
	if a.Portion < 0 || a.Portion > 1 {
		return a, true, fmt.Errorf("annotation %s: portion %g outside 0..1", GPUAssignmentAnnotation, a.Portion)
	}
	return a, true, nil
}

// Uses reports whether the assignment includes any of the given GPUs. A GPU matches by
// UUID when both sides have one, else by index.
func (a GPUAssignment) Uses(gpus []GPUInfo) bool {
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
