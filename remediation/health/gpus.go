package health

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// GPUsAnnotation holds a node's per-GPU inventory and health as a JSON array of GPUInfo.
// The agent writes it on real nodes and the rig writes it on simulated ones; the scheduler
// reads it to avoid just the unhealthy GPU.
const GPUsAnnotation = v1alpha1.NodeGPUsAnnotation

// GPUInfo is one entry of the GPUsAnnotation.
type GPUInfo struct {
	Index     int    `json:"index"`
	UUID      string `json:"uuid"`
	Model     string `json:"model"`
	MemoryMiB uint64 `json:"memoryMiB"`
	Healthy   bool   `json:"healthy"`
}

// GPUHealth lists every GPU in the readings with healthy false where any finding names it.
func GPUHealth(r Readings, findings []Finding) []GPUInfo {
	bad := map[int]bool{}
	for _, f := range findings {
		if f.GPU >= 0 {
			bad[f.GPU] = true
		}
	}
	out := make([]GPUInfo, 0, len(r.GPUs))
	for _, g := range r.GPUs {
		out = append(out, GPUInfo{Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB, Healthy: !bad[g.Index]})
	}
	return out
}

// ParseGPUs reads a GPUsAnnotation value; an empty value is an empty inventory.
func ParseGPUs(value string) ([]GPUInfo, error) {
	if value == "" {
		return nil, nil
	}
	var out []GPUInfo
	if err := json.Unmarshal([]byte(value), &out); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", GPUsAnnotation, err)
	}
	return out, nil
}

// FormatGPUs writes a GPUsAnnotation value.
func FormatGPUs(gpus []GPUInfo) string {
	b, _ := json.Marshal(gpus) // a slice of plain structs always marshals
	return string(b)
}

func itoa(i int) string { return strconv.Itoa(i) }
