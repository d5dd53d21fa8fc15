package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// NodeGPU is one entry of NodeGPUsAnnotation, the one form its writers (the agent on real
// nodes, the rig on simulated ones) and its readers (the scheduler, the remediation
// controller) share: a GPU's index on the node, UUID, model, memory and health.
type NodeGPU struct {
	Index     int32  `json:"index"`
	UUID      string `json:"uuid"`
	Model     string `json:"model"`
	MemoryMiB int64  `json:"memoryMiB"`
	Healthy   bool   `json:"healthy"`
}

// ParseNodeGPUs reads a NodeGPUsAnnotation value; an empty value is an empty inventory.
func ParseNodeGPUs(value string) ([]NodeGPU, error) {
	if value == "" {
		return nil, nil
	}
	var out []NodeGPU
	if err := json.Unmarshal([]byte(value), &out); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON array of {index, uuid, model, memoryMiB, healthy}: %w", NodeGPUsAnnotation, err)
	}
	return out, nil
}

// FormatNodeGPUs writes a NodeGPUsAnnotation value.
func FormatNodeGPUs(gpus []NodeGPU) string {
	b, _ := json.Marshal(gpus) // plain values: cannot fail
	return string(b)
}

// NodeGPUCount is how many GPUs a node has for Slurm's views (sinfo, the partitions a
// job may fit, reservations, the ledger): its allocatable nvidia.com/gpu, or, on a node
// whose GPUs come through Dynamic Resource Allocation (no device plugin, so none
// allocatable), the GPU Operator's count label.
func NodeGPUCount(n *corev1.Node) int64 {
	a := n.Status.Allocatable
	if len(a) == 0 {
		a = n.Status.Capacity
	}
	if q, ok := a[GPUResource]; ok && !q.IsZero() {
		return q.Value()
	}
	c, err := strconv.ParseInt(n.Labels[GPUCountLabel], 10, 64)
	if err != nil || c < 0 {
		return 0
	}
	return c
}
