package scheduler

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

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

// Assignment is the JSON of v1alpha1.GPUAssignmentAnnotation. The binder writes it, with
// v1alpha1.VisibleDevicesAnnotation and v1alpha1.GPUPortionAnnotation, on a pod through its
// Binding (kube-apiserver copies a Binding's annotations onto the pod in the same write);
// the webhook points container environment variables at the latter two with fieldRef, so
// a real kubelet resolves them at start.
type Assignment struct {
	GPUs []AssignedGPU `json:"gpus"`
	// Portion is the share of each device, 1 for whole devices.
	Portion float64 `json:"portion"`
	// GPUMemoryMiB is the memory granted on each device, 0 when unstated.
	GPUMemoryMiB int64 `json:"gpuMemoryMiB,omitempty"`
	// MPS is set for a shared GPU on a node running an MPS control daemon
	// (v1alpha1.MPSLabel): the portion and memory are then limits (mps.go).
	MPS bool `json:"mps,omitempty"`
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
	out := map[string]string{
		v1alpha1.GPUAssignmentAnnotation:  string(raw),
		v1alpha1.VisibleDevicesAnnotation: strings.Join(ids, ","),
		v1alpha1.GPUPortionAnnotation:     strconv.FormatFloat(a.Portion, 'f', -1, 64),
	}
	for k, v := range a.mpsLimits() {
		out[k] = v
	}
	return out
}

// ParseAssignment reads v1alpha1.GPUAssignmentAnnotation back.
func ParseAssignment(s string) (Assignment, error) {
	var a Assignment
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return a, fmt.Errorf("%s: %w", v1alpha1.GPUAssignmentAnnotation, err)
	}
	if a.Portion < 0 || a.Portion > 1 {
		return a, fmt.Errorf("%s: portion %v is not in [0,1]", v1alpha1.GPUAssignmentAnnotation, a.Portion)
	}
	return a, nil
}
