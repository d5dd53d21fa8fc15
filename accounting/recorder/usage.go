package recorder

import (
	"context"
	"sort"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/bridge"
)

// UsageSource feeds the scheduling core the ledger's decayed usage per queue and
// partition, its historical usage for fair share.
type UsageSource struct {
	Store  accounting.Store
	Config accounting.UsageConfig
	// Clock is the time usage is computed at; nil means time.Now.
	Clock func() time.Time
}

// QueueUsage reads the runs that still count and returns them as the core's
// QueueUsage, sorted by queue and partition: GPUs in thousandths, CPUs in
// millicores, memory in bytes, GPU memory in MiB.
func (u UsageSource) QueueUsage(ctx context.Context) ([]bridge.QueueUsage, error) {
	now := time.Now()
	if u.Clock != nil {
		now = u.Clock()
	}
	usage, err := accounting.LoadUsage(ctx, u.Store, u.Config, now)
	if err != nil {
		return nil, err
	}
	out := make([]bridge.QueueUsage, 0, len(usage.ByQueue))
	for qp, t := range usage.ByQueue {
		out = append(out, bridge.QueueUsage{Queue: qp.Queue, Partition: qp.Partition, Usage: bridge.Resources{
			GPUMilli:     int64(t[accounting.TRESGPU] * 1000),
			GPUMemoryMiB: int64(t[accounting.TRESGPUMem]),
			CPUMilli:     int64(t[accounting.TRESCPU] * 1000),
			MemoryBytes:  int64(t[accounting.TRESMem] * (1 << 20)),
		}})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Queue != out[b].Queue {
			return out[a].Queue < out[b].Queue
		}
		return out[a].Partition < out[b].Partition
	})
	return out, nil
}
