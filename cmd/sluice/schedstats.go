package main

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/slurmapi"
)

// schedulerStats reads sdiag's scheduling-cycle figures from the
// scheduler's own Prometheus series in the server's registry: the cycle
// histogram's count and sum, and the last and longest cycle. A server
// that does not run the scheduler (not the leader) reports zeros, as a
// backup slurmctld does.
func schedulerStats(g prometheus.Gatherer) func() slurmapi.SchedulerStats {
	return func() slurmapi.SchedulerStats {
		var st slurmapi.SchedulerStats
		families, err := g.Gather()
		if err != nil {
			return st
		}
		// Whole microseconds, as sdiag shows them.
		seconds := func(v float64) time.Duration { return time.Duration(math.Round(v*1e6)) * time.Microsecond }
		for _, f := range families {
			if len(f.GetMetric()) == 0 {
				continue
			}
			m := f.GetMetric()[0]
			switch f.GetName() {
			case "sluice_scheduler_cycle_duration_seconds":
				if h := m.GetHistogram(); h != nil && h.GetSampleCount() > 0 {
					st.Cycles = int64(h.GetSampleCount())
					st.Mean = seconds(h.GetSampleSum() / float64(h.GetSampleCount()))
				}
			case "sluice_scheduler_last_cycle_duration_seconds":
				st.Last = seconds(m.GetGauge().GetValue())
			case "sluice_scheduler_max_cycle_duration_seconds":
				st.Max = seconds(m.GetGauge().GetValue())
			}
		}
		return st
	}
}
