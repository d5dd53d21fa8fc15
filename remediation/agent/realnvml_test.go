package agent

import (
	"context"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/remediation/health"
)

// TestRealNVML reads a real GPU machine's GPUs and registers for XID events; it skips
// where the NVIDIA driver is absent. A healthy machine must list every GPU with its
// identity and raise no GPU finding.
func TestRealNVML(t *testing.T) {
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		t.Skipf("no NVML here: %v", ret)
	}
	defer lib.Shutdown()
	gpus, err := readGPUs(lib, 0, nil)
	if err != nil || len(gpus) == 0 {
		t.Fatalf("readGPUs = %d GPUs, %v", len(gpus), err)
	}
	for _, g := range gpus {
		if g.UUID == "" || g.Model == "" || g.MemoryMiB == 0 || g.Lost {
			t.Errorf("GPU %d read as %+v", g.Index, g)
		}
		t.Logf("GPU %d %s %s %d MiB, %d NVLinks, PCIe x%d/x%d Gen%d/%d", g.Index, g.UUID, g.Model, g.MemoryMiB,
			len(g.NVLinks), g.PCIe.Width, g.PCIe.MaxWidth, g.PCIe.Gen, g.PCIe.MaxGen)
	}
	if f := health.Evaluate(nil, health.Readings{GPUs: gpus}, health.Expectations{}); len(f) != 0 {
		t.Errorf("findings on a healthy machine: %+v", f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := watchEvents(ctx, lib, 100*time.Millisecond, make(chan health.XIDRecord, 1), make(chan struct{}, 1)); err != nil {
		t.Errorf("XID event loop on real NVML: %v", err)
	}
}
