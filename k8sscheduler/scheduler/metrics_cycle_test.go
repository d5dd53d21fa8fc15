package scheduler

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestObserveCycleKeepsLastAndMax: sdiag's last and longest cycle follow
// the cycles observed.
func TestObserveCycleKeepsLastAndMax(t *testing.T) {
	m := newMetrics()
	for _, d := range []time.Duration{2 * time.Millisecond, 5 * time.Millisecond, time.Millisecond} {
		m.observeCycle(d)
	}
	if last, longest := testutil.ToFloat64(m.lastCycle), testutil.ToFloat64(m.maxCycle); last != 0.001 || longest != 0.005 {
		t.Errorf("last %v max %v, want 0.001 and 0.005", last, longest)
	}
	if n := testutil.CollectAndCount(m.cycle); n != 1 {
		t.Errorf("cycle histogram: %d series", n)
	}
}
