package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/test/e2e"
)

// faultRun is one fault test in progress: the site, its load and the GPU
// sampler watching it.
type faultRun struct {
	t       *testing.T
	ctx     context.Context
	sc      scale
	site    *site
	load    *load
	sampler *gpuSampler
}

// begin starts a site of replicas servers on ledger ("" for SQLite), the
// sampler and the load, and returns once a third of the burst is
// acknowledged: the fault then meets a burst in progress.
func begin(t *testing.T, replicas int, ledger string) *faultRun {
	t.Helper()
	return beginWith(t, replicas, ledger, nil)
}

// beginWith is begin with the load adjusted by tune before it starts.
func beginWith(t *testing.T, replicas int, ledger string, tune func(*load)) *faultRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sc := currentScale()
	s := startSite(t, replicas, ledger)
	f := &faultRun{t: t, ctx: ctx, sc: sc, site: s, sampler: startSampler(e2e.Rig(t).Client())}
	t.Cleanup(func() { f.sampler.finish() })
	f.load = newLoad(t, s, sc)
	if tune != nil {
		tune(f.load)
	}
	f.load.start(ctx)
	f.load.waitAcked(sc.jobs / 3)
	return f
}

// end measures recovery from faultAt, lets the load finish, checks it and
// reports the figures.
func (f *faultRun) end(fault string, faultAt time.Time, outage time.Duration) {
	f.t.Helper()
	recovery := f.load.probe(f.ctx, faultAt)
	finished := f.load.settle(f.ctx, f.sampler)
	report(f.t, measured{fault: fault, outage: outage, recovery: recovery, finished: finished, l: f.load})
}
