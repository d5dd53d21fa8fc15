// Package metrics exports the accounting ledger to Prometheus: GPU-seconds charged to
// each account, jobs by state, and each account's fair share next to what it holds now.
// Values are read from the ledger at scrape time, at most once per MinInterval, so a
// busy Prometheus does not turn into ledger load.
package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/accounting"
)

// Defaults.
const (
	DefaultMinInterval = 30 * time.Second
	DefaultJobWindow   = 24 * time.Hour
)

// Config configures a Collector.
type Config struct {
	Store accounting.Store
	// Usage is how decayed usage (for fair share) is computed.
	Usage accounting.UsageConfig
	// Assocs returns the fair-share tree (the Queue tree and its users); nil means the
	// tree is made of the accounts and users that have usage, one share each.
	Assocs func(ctx context.Context) ([]accounting.ShareAssoc, error)
	// MinInterval is the shortest time between two reads of the ledger.
	MinInterval time.Duration
	// JobWindow is how far back jobs are counted by state: the jobs that existed in
	// the last JobWindow.
	JobWindow time.Duration
	// Clock is nil for time.Now.
	Clock func() time.Time
}

// Collector is a prometheus.Collector over the ledger.
type Collector struct {
	cfg Config

	gpuSeconds, jobs, gpusHeld, normShares, effUsage, levelFS, fairShare, scrapeErrors *prometheus.Desc

	mu      sync.Mutex
	read    time.Time
	metrics []prometheus.Metric
	errs    float64
}

// New returns a collector; Register it on a Registerer.
func New(cfg Config) (*Collector, error) {
	if cfg.Store == nil {
		return nil, errors.New("accounting metrics: no ledger store")
	}
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = DefaultMinInterval
	}
	if cfg.JobWindow <= 0 {
		cfg.JobWindow = DefaultJobWindow
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("sluice_accounting_"+name, help, labels, nil)
	}
	return &Collector{cfg: cfg,
		gpuSeconds:   d("gpu_seconds_total", "GPU-seconds held by jobs charged to the account in the partition, undecayed, since the ledger began.", "account", "partition"),
		jobs:         d("jobs", "Jobs that existed during the job window (default the last 24 hours), by current state.", "state"),
		gpusHeld:     d("gpus_allocated", "GPUs (fractions included) held right now by running jobs of the account.", "account"),
		normShares:   d("fairshare_norm_shares", "The account's shares among its siblings (sshare NormShares): its fair share of its parent.", "account"),
		effUsage:     d("fairshare_effective_usage", "The account's decayed usage among its siblings (sshare EffectvUsage): what it took of its parent.", "account"),
		levelFS:      d("fairshare_level_fs", "NormShares / EffectvUsage (sshare LevelFS); above 1 the account used less than its share. +Inf without usage.", "account"),
		fairShare:    d("fairshare_factor", "The user's Fair Tree FairShare factor in the account, 0..1 (sshare FairShare).", "account", "user"),
		scrapeErrors: d("scrape_errors_total", "Reads of the ledger for metrics that failed."),
	}, nil
}

// Register adds the collector to reg.
func (c *Collector) Register(reg prometheus.Registerer) error { return reg.Register(c) }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.gpuSeconds, c.jobs, c.gpusHeld, c.normShares, c.effUsage, c.levelFS, c.fairShare, c.scrapeErrors} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the last reading, refreshed when older than
// MinInterval. A failed read keeps the previous values and counts an error.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Clock()
	if c.metrics == nil || now.Sub(c.read) >= c.cfg.MinInterval {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		ms, err := c.readLedger(ctx, now)
		cancel()
		if err != nil {
			c.errs++
		} else {
			c.metrics, c.read = ms, now
		}
	}
	for _, m := range c.metrics {
		ch <- m
	}
	ch <- prometheus.MustNewConstMetric(c.scrapeErrors, prometheus.CounterValue, c.errs)
}

func (c *Collector) readLedger(ctx context.Context, now time.Time) ([]prometheus.Metric, error) {
	var out []prometheus.Metric
	runs, err := c.cfg.Store.Runs(ctx, time.Time{}, now)
	if err != nil {
		return nil, err
	}
	total, err := accounting.ComputeUsage(runs, accounting.UsageConfig{NoDecay: true}, now)
	if err != nil {
		return nil, err
	}
	for qp, t := range total.ByQueue {
		out = append(out, prometheus.MustNewConstMetric(c.gpuSeconds, prometheus.CounterValue, t[accounting.TRESGPU], qp.Queue, qp.Partition))
	}
	held := map[string]float64{}
	for _, r := range runs {
		if r.End.IsZero() || r.End.After(now) {
			held[r.Account] += r.Allocated.GPUs
		}
	}
	for a, g := range held {
		out = append(out, prometheus.MustNewConstMetric(c.gpusHeld, prometheus.GaugeValue, g, a))
	}

	jobs, err := c.cfg.Store.Jobs(ctx, accounting.JobFilter{Start: now.Add(-c.cfg.JobWindow), End: now})
	if err != nil {
		return nil, err
	}
	byState := map[accounting.JobState]float64{}
	for _, j := range jobs {
		byState[j.State]++
	}
	for _, st := range accounting.AllStates {
		out = append(out, prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, byState[st], string(st)))
	}

	shares, err := c.fairTree(ctx, now)
	if err != nil {
		return nil, err
	}
	for _, r := range shares {
		if r.Depth == 0 {
			continue
		}
		if r.IsUser() {
			out = append(out, prometheus.MustNewConstMetric(c.fairShare, prometheus.GaugeValue, r.FairShare, r.Account, r.User))
			continue
		}
		out = append(out,
			prometheus.MustNewConstMetric(c.normShares, prometheus.GaugeValue, r.NormShares, r.Account),
			prometheus.MustNewConstMetric(c.effUsage, prometheus.GaugeValue, r.EffectvUsage, r.Account),
			prometheus.MustNewConstMetric(c.levelFS, prometheus.GaugeValue, r.LevelFS, r.Account))
	}
	return out, nil
}

func (c *Collector) fairTree(ctx context.Context, now time.Time) ([]accounting.ShareRow, error) {
	var assocs []accounting.ShareAssoc
	if c.cfg.Assocs != nil {
		var err error
		if assocs, err = c.cfg.Assocs(ctx); err != nil {
			return nil, err
		}
	}
	u, err := accounting.LoadUsage(ctx, c.cfg.Store, c.cfg.Usage, now)
	if err != nil {
		return nil, err
	}
	return accounting.FairTree(assocs, u)
}
