package scheduler

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/bridge"
)

// metrics are the scheduler's Prometheus series.
type metrics struct {
	cycle       prometheus.Histogram
	lastCycle   prometheus.Gauge // sdiag's schedule_cycle_last
	maxCycle    prometheus.Gauge // sdiag's schedule_cycle_max
	maxSeconds  float64
	podsBound   prometheus.Counter
	bindsFailed prometheus.Counter
	evictions   *prometheus.CounterVec
	pending     *prometheus.GaugeVec
	allocated   *prometheus.GaugeVec
	fairShare   *prometheus.GaugeVec
	lastPending map[string]bool
	lastShares  map[[2]string]bool
}

func newMetrics() *metrics {
	return &metrics{
		cycle: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sluice_scheduler_cycle_duration_seconds",
			Help:    "Time of one scheduling cycle: snapshot, core and planning the writes.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		lastCycle: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_scheduler_last_cycle_duration_seconds",
			Help: "Time of the last scheduling cycle (sdiag's Last cycle)."}),
		maxCycle: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_scheduler_max_cycle_duration_seconds",
			Help: "Longest scheduling cycle since the scheduler started (sdiag's Max cycle)."}),
		podsBound: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_scheduler_pods_bound_total",
			Help: "Pods bound (or created bound for Slurm jobs)."}),
		bindsFailed: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_scheduler_binds_failed_total",
			Help: "Binds or bound creates the API server refused; the pods are placed again."}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_scheduler_evictions_total",
			Help: "Pods evicted, by kind (reclaim, preempt, consolidate, stale-gang)."}, []string{"kind"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_scheduler_pending_jobs",
			Help: "PodGroups waiting after the last cycle, by reason code."}, []string{"reason"}),
		allocated: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_queue_allocated_gpus",
			Help: "GPUs a queue holds in a partition after the last cycle."}, []string{"queue", "partition"}),
		fairShare: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_queue_fair_share_gpus",
			Help: "GPUs the last cycle's fair-share division gave a queue in a partition."}, []string{"queue", "partition"}),
		lastPending: map[string]bool{}, lastShares: map[[2]string]bool{},
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.cycle, m.lastCycle, m.maxCycle, m.podsBound, m.bindsFailed, m.evictions, m.pending, m.allocated, m.fairShare} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// observeCycle records one scheduling cycle's time. Only the scheduler's
// loop calls it, so the maximum needs no lock.
func (m *metrics) observeCycle(took time.Duration) {
	secs := took.Seconds()
	m.cycle.Observe(secs)
	m.lastCycle.Set(secs)
	if secs > m.maxSeconds {
		m.maxSeconds = secs
		m.maxCycle.Set(secs)
	}
}

// observePending sets the pending gauge; reasons seen before and gone now drop to 0.
func (m *metrics) observePending(pending map[string]bridge.Pending) {
	count := map[string]int{}
	for _, p := range pending {
		count[p.Code]++
	}
	for code := range m.lastPending {
		if count[code] == 0 {
			m.pending.WithLabelValues(code).Set(0)
		}
	}
	for code, n := range count {
		m.pending.WithLabelValues(code).Set(float64(n))
		m.lastPending[code] = true
	}
}

// observeShares sets the queue gauges; queues gone from the standing are removed.
func (m *metrics) observeShares(shares []bridge.QueueShare) {
	now := map[[2]string]bool{}
	for _, sh := range shares {
		now[[2]string{sh.Queue, sh.Partition}] = true
		m.allocated.WithLabelValues(sh.Queue, sh.Partition).Set(float64(sh.Allocated.GPUMilli) / 1000)
		m.fairShare.WithLabelValues(sh.Queue, sh.Partition).Set(float64(sh.FairShare.GPUMilli) / 1000)
	}
	for k := range m.lastShares {
		if !now[k] {
			m.allocated.DeleteLabelValues(k[0], k[1])
			m.fairShare.DeleteLabelValues(k[0], k[1])
		}
	}
	m.lastShares = now
}
