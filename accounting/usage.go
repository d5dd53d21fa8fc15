package accounting

import (
	"context"
	"fmt"
	"math"
	"time"
)

// DefaultHalfLife is Slurm's default PriorityDecayHalfLife.
const DefaultHalfLife = 7 * 24 * time.Hour

// UsageConfig says how recorded runs become fair-share usage.
type UsageConfig struct {
	// HalfLife is how long until a second of use counts half
	// (PriorityDecayHalfLife). Zero means DefaultHalfLife.
	HalfLife time.Duration
	// NoDecay counts every second fully, however old
	// (PriorityDecayHalfLife=0 in Slurm).
	NoDecay bool
	// QOSUsageFactor multiplies usage charged under a QOS (Slurm's QOS
	// UsageFactor); a QOS not listed counts 1.
	QOSUsageFactor map[string]float64
	// BillingWeights turns a job's allocation into billing units per second
	// (TRESBillingWeights), by TRES name. Nil means one unit per GPU, since
	// GPUs are what Sluice shares.
	BillingWeights map[string]float64
}

func (c UsageConfig) halfLife() time.Duration {
	if c.HalfLife == 0 {
		return DefaultHalfLife
	}
	return c.HalfLife
}

// DecayHalfLife is the half-life usage is read with, as Slurm's
// PriorityDecayHalfLife reads: 0 when usage does not decay.
func (c UsageConfig) DecayHalfLife() time.Duration {
	if c.NoDecay {
		return 0
	}
	return c.halfLife()
}

func (c UsageConfig) validate() error {
	if c.HalfLife < 0 {
		return fmt.Errorf("usage half-life %s is negative", c.HalfLife)
	}
	for q, f := range c.QOSUsageFactor {
		if f < 0 || math.IsNaN(f) {
			return fmt.Errorf("QOS %s: usage factor %v must be >= 0", q, f)
		}
	}
	for n, w := range c.BillingWeights {
		if (TRES{}).Amount(n) < 0 || n == TRESBilling {
			return fmt.Errorf("billing weight for unknown TRES %q", n)
		}
		if w < 0 {
			return fmt.Errorf("billing weight for %s is negative", n)
		}
	}
	return nil
}

// Billing is the job's billing rate under these weights.
func (c UsageConfig) Billing(t TRES) float64 {
	if c.BillingWeights == nil {
		return t.GPUs
	}
	b := 0.0
	for n, w := range c.BillingWeights {
		b += w * t.Amount(n)
	}
	return b
}

// Assoc names an association: an account, or a user within an account.
type Assoc struct {
	Account string
	User    string // empty for the account itself
}

// TRESSeconds is an amount of use per TRES name (memory in MB-seconds).
type TRESSeconds map[string]float64

func (t TRESSeconds) add(alloc TRES, billing, seconds float64) {
	for _, n := range KnownTRES {
		v := alloc.Amount(n)
		if n == TRESBilling {
			v = billing
		}
		if v > 0 {
			t[n] += v * seconds
		}
	}
}

// QueuePartition names a queue (account) in one partition: the unit the
// scheduling core divides fair share by.
type QueuePartition struct {
	Queue     string
	Partition string
}

// Usage is decayed, QOS-weighted use as of Now, per user association (for
// sshare) and per queue and partition (for the core: convert gres/gpu to
// GPUMilli x1000, cpu to CPUMilli x1000, mem MB to bytes, gres/gpumem MB to
// MiB; only ratios between sibling queues matter to it).
type Usage struct {
	Now     time.Time
	ByUser  map[Assoc]TRESSeconds
	ByQueue map[QueuePartition]TRESSeconds
}

// HistoricalUsage is what the scheduling core takes for fair share: decayed
// GPU-seconds charged directly to each account (queue), keyed by account.
// A parent queue's usage is the sum of its children's.
type HistoricalUsage map[string]float64

// decayedSeconds is the integral over [a, b] of 2^(-(now-t)/h) dt: a second
// used at t counts 2^(-age/halfLife) at now. Continuous decay gives the
// value Slurm's periodic decay approaches, and is the same for any now.
// h == 0 means no decay: plain seconds.
func decayedSeconds(a, b, now time.Time, h time.Duration) float64 {
	if b.After(now) {
		b = now
	}
	if !b.After(a) {
		return 0
	}
	if h == 0 {
		return b.Sub(a).Seconds()
	}
	hs := h.Seconds()
	ageA, ageB := now.Sub(a).Seconds(), now.Sub(b).Seconds()
	return hs / math.Ln2 * (math.Exp2(-ageB/hs) - math.Exp2(-ageA/hs))
}

// ComputeUsage charges each run to its user and account: allocation times
// decayed seconds times the QOS usage factor. Runs still open are charged up
// to now; nothing after now counts, so the result is a function of the runs
// and now alone.
func ComputeUsage(runs []RunUsage, cfg UsageConfig, now time.Time) (Usage, error) {
	if err := cfg.validate(); err != nil {
		return Usage{}, err
	}
	u := Usage{Now: now, ByUser: map[Assoc]TRESSeconds{}, ByQueue: map[QueuePartition]TRESSeconds{}}
	h := cfg.halfLife()
	for _, r := range runs {
		end := r.End
		if end.IsZero() {
			end = now
		}
		factor := 1.0
		if f, ok := cfg.QOSUsageFactor[r.QOS]; ok {
			factor = f
		}
		var secs float64
		if cfg.NoDecay {
			secs = decayedSeconds(r.Start, end, now, 0) * factor
		} else {
			secs = decayedSeconds(r.Start, end, now, h) * factor
		}
		if secs == 0 {
			continue
		}
		key := Assoc{Account: r.Account, User: r.User}
		if u.ByUser[key] == nil {
			u.ByUser[key] = TRESSeconds{}
		}
		u.ByUser[key].add(r.Allocated, cfg.Billing(r.Allocated), secs)
		qp := QueuePartition{Queue: r.Account, Partition: r.Partition}
		if u.ByQueue[qp] == nil {
			u.ByQueue[qp] = TRESSeconds{}
		}
		u.ByQueue[qp].add(r.Allocated, cfg.Billing(r.Allocated), secs)
	}
	return u, nil
}

// forgottenAfter is how many half-lives back LoadUsage reads: a second used
// earlier counts less than 2^-30 (one billionth) and is left out, so the
// scheduler's periodic refresh reads recent runs, not the whole ledger.
const forgottenAfter = 30

// LoadUsage reads the runs that still count from the store and computes
// usage as of now.
func LoadUsage(ctx context.Context, s Store, cfg UsageConfig, now time.Time) (Usage, error) {
	if err := cfg.validate(); err != nil {
		return Usage{}, err
	}
	var from time.Time
	if !cfg.NoDecay {
		from = now.Add(-forgottenAfter * cfg.halfLife())
	}
	runs, err := s.Runs(ctx, from, now)
	if err != nil {
		return Usage{}, fmt.Errorf("load runs: %w", err)
	}
	return ComputeUsage(runs, cfg, now)
}

// Historical sums the decayed GPU-seconds charged directly to each account.
func (u Usage) Historical() HistoricalUsage {
	out := HistoricalUsage{}
	for a, t := range u.ByUser {
		out[a.Account] += t[TRESGPU]
	}
	return out
}
