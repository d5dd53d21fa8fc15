package scheduler

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/bridge"
)

// usageFeed keeps the latest historical usage (Config.Usage) for the cycle to put into
// each snapshot; it is refreshed by its own goroutine, so a slow ledger never delays a
// cycle.
type usageFeed struct {
	latest atomic.Pointer[[]bridge.QueueUsage]
}

// current is the last usage read, nil before the first successful read.
func (f *usageFeed) current() []bridge.QueueUsage {
	if u := f.latest.Load(); u != nil {
		return *u
	}
	return nil
}

// refresh reads usage once; on error the previous figures stay, as fair share built on
// slightly old usage beats fair share on none.
func (f *usageFeed) refresh(ctx context.Context, read func(context.Context) ([]bridge.QueueUsage, error)) {
	u, err := read(ctx)
	if err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).Info("reading historical usage failed; fair share keeps the last figures", "err", err)
		}
		return
	}
	f.latest.Store(&u)
}

// run refreshes usage at once and then every period until ctx ends.
func (f *usageFeed) run(ctx context.Context, period time.Duration, read func(context.Context) ([]bridge.QueueUsage, error)) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		f.refresh(ctx, read)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
