package agent

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/remediation/health"
)

// Inventory reads the machine's GPUs through NVML once, as the agent's polls do, without a
// cluster: `sluice agent --list-gpus` (hack/gpu-check reads the real devices with it).
func Inventory() ([]health.GPUReading, error) {
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML: %v (no NVIDIA driver on this machine?)", nvml.ErrorString(ret))
	}
	defer lib.Shutdown()
	return readGPUs(lib, 0, nil)
}
