package v1alpha1

import (
	"encoding/json"
	"fmt"
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
