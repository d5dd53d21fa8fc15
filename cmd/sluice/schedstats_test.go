package main

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestSchedulerStatsFromTheRegistry: sdiag's cycle figures are the
// scheduler's series as registered (names as k8sscheduler/scheduler
// registers them), read back from a real registry.
func TestSchedulerStatsFromTheRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	if got := schedulerStats(reg)(); got.Cycles != 0 || got.Last != 0 {
		t.Errorf("no scheduler: %+v, want zeros", got)
	}
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sluice_scheduler_cycle_duration_seconds"})
	last := prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_scheduler_last_cycle_duration_seconds"})
	longest := prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_scheduler_max_cycle_duration_seconds"})
	reg.MustRegister(h, last, longest)
	for _, s := range []float64{0.002, 0.004, 0.003} {
		h.Observe(s)
	}
	last.Set(0.003)
	longest.Set(0.004)
	got := schedulerStats(reg)()
	if got.Cycles != 3 || got.Mean != 3*time.Millisecond || got.Last != 3*time.Millisecond || got.Max != 4*time.Millisecond {
		t.Errorf("stats %+v, want 3 cycles, mean 3ms, last 3ms, max 4ms", got)
	}
}
