package scheduler

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Annotations the binder writes on a pod through its Binding (kube-apiserver copies a
// Binding's annotations onto the pod in the same write). The webhook points container
// environment variables at them with fieldRef, so a real kubelet resolves them at start.
const (
	// AssignmentAnnotation holds the whole assignment as JSON (see Assignment).
	AssignmentAnnotation = v1alpha1.GPUAssignmentAnnotation
	// VisibleDevicesAnnotation is the comma-separated GPU UUIDs (indices where a node
	// publishes no UUIDs), ready for NVIDIA_VISIBLE_DEVICES.
	VisibleDevicesAnnotation = "sluice.dev/visible-devices"
	// GPUPortionAnnotation is the portion of each device the pod may use, "0.25", or "1"
	// for whole devices.
	GPUPortionAnnotation = "sluice.dev/gpu-portion"
)

// ConditionEvicted is set on a PodGroup (False is never written) when the scheduler
// evicted one of its pods; the reason is the eviction kind, the message says for whom.
const ConditionEvicted = "Evicted"

// ReasonWaitingForPods is the Scheduled condition's reason while a PodGroup has fewer pods
// than its minMember, so the gang cannot be considered yet.
const ReasonWaitingForPods = "WaitingForPods"

// ReasonNoPodFactory is the Scheduled condition's reason of a pod-less (Slurm) PodGroup when
// the scheduler was built without a PodFactory.
const ReasonNoPodFactory = "NoPodFactory"

// ReasonPodCreateFailed is the Scheduled condition's reason of a Slurm PodGroup whose pods
// could not be made or created; the scheduler retries on the next cycle.
const ReasonPodCreateFailed = "PodCreateFailed"

// Assignment is the JSON of AssignmentAnnotation.
type Assignment struct {
	GPUs []AssignedGPU `json:"gpus"`
	// Portion is the share of each device, 1 for whole devices.
	Portion float64 `json:"portion"`
	// GPUMemoryMiB is the memory granted on each device, 0 when unstated.
	GPUMemoryMiB int64 `json:"gpuMemoryMiB,omitempty"`
}

// AssignedGPU is one device of an Assignment.
type AssignedGPU struct {
	Index int32  `json:"index"`
	UUID  string `json:"uuid,omitempty"`
}

// assignmentOf turns a bind into its assignment; ok is false for a bind without GPUs.
func assignmentOf(b *bridge.Bind) (Assignment, bool) {
	if len(b.GPUs) == 0 {
		return Assignment{}, false
	}
	a := Assignment{GPUs: make([]AssignedGPU, len(b.GPUs)), Portion: float64(b.GPUMilli) / 1000, GPUMemoryMiB: b.GPUMemoryMiB}
	if b.GPUMilli == 0 {
		a.Portion = 1
	}
	for i, g := range b.GPUs {
		a.GPUs[i] = AssignedGPU{Index: g.Index, UUID: g.UUID}
	}
	return a, true
}

// annotations renders the assignment as the three pod annotations.
func (a Assignment) annotations() map[string]string {
	raw, _ := json.Marshal(a) // plain structs: cannot fail
	ids := make([]string, len(a.GPUs))
	for i, g := range a.GPUs {
		ids[i] = g.UUID
		if ids[i] == "" {
			ids[i] = strconv.Itoa(int(g.Index))
		}
	}
	return map[string]string{
		AssignmentAnnotation:     string(raw),
		VisibleDevicesAnnotation: strings.Join(ids, ","),
		GPUPortionAnnotation:     strconv.FormatFloat(a.Portion, 'f', -1, 64),
	}
}

// ParseAssignment reads AssignmentAnnotation back.
func ParseAssignment(s string) (Assignment, error) {
	var a Assignment
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return a, fmt.Errorf("%s: %w", AssignmentAnnotation, err)
	}
	if a.Portion < 0 || a.Portion > 1 {
		return a, fmt.Errorf("%s: portion %v is not in [0,1]", AssignmentAnnotation, a.Portion)
	}
	return a, nil
}
