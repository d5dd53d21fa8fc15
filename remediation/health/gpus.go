package health

import (
	"strconv"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// GPUsAnnotation holds a node's per-GPU inventory and health as a JSON array of GPUInfo.
// The agent writes it on real nodes and the rig writes it on simulated ones; the scheduler
// reads it to avoid just the unhealthy GPU.
const GPUsAnnotation = v1alpha1.NodeGPUsAnnotation

// GPUInfo is one entry of the GPUsAnnotation: the API package's one type for it.
type GPUInfo = v1alpha1.NodeGPU

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
		out = append(out, GPUInfo{Index: int32(g.Index), UUID: g.UUID, Model: g.Model, MemoryMiB: int64(g.MemoryMiB), Healthy: !bad[g.Index]})
	}
	return out
}

// ParseGPUs reads a GPUsAnnotation value; an empty value is an empty inventory.
func ParseGPUs(value string) ([]GPUInfo, error) { return v1alpha1.ParseNodeGPUs(value) }

// FormatGPUs writes a GPUsAnnotation value.
func FormatGPUs(gpus []GPUInfo) string { return v1alpha1.FormatNodeGPUs(gpus) }

func itoa(i int) string { return strconv.Itoa(i) }
