package accounting

import (
	"math"
	"testing"
	"time"
)

func TestComputeUsage(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	hour := time.Hour
	hs := hour.Seconds()
	run := func(account, user, qos string, gpus float64, start, end time.Time) RunUsage {
		return RunUsage{Run: Run{JobID: 1, Start: start, End: end}, Account: account, User: user, QOS: qos, Partition: "h100",
			Allocated: TRES{GPUs: gpus, CPUs: 4}}
	}
	cases := []struct {
		name string
		cfg  UsageConfig
		runs []RunUsage
		want map[Assoc]float64 // decayed GPU-seconds
	}{
		{
			name: "no decay is plain GPU-seconds",
			cfg:  UsageConfig{NoDecay: true},
			runs: []RunUsage{run("nlp", "alice", "normal", 2, ago(2*hour), ago(hour))},
			want: map[Assoc]float64{{"nlp", "alice"}: 7200},
		},
		{
			// Used over the last half-life: integral of 2^(-age/h) from 0 to h
			// is h/ln2 * (1 - 1/2).
			name: "one GPU over the last half-life",
			cfg:  UsageConfig{HalfLife: hour},
			runs: []RunUsage{run("nlp", "alice", "normal", 1, ago(hour), now)},
			want: map[Assoc]float64{{"nlp", "alice"}: hs / math.Ln2 * 0.5},
		},
		{
			// Two GPUs over the half-life before that (weight 1/2..1/4), under
			// a QOS that charges half.
			name: "QOS usage factor",
			cfg:  UsageConfig{HalfLife: hour, QOSUsageFactor: map[string]float64{"preemptible": 0.5}},
			runs: []RunUsage{run("vision", "bob", "preemptible", 2, ago(2*hour), ago(hour))},
			want: map[Assoc]float64{{"vision", "bob"}: 2 * 0.5 * hs / math.Ln2 * 0.25},
		},
		{
			name: "a running job counts up to now, not beyond",
			cfg:  UsageConfig{HalfLife: hour},
			runs: []RunUsage{
				run("nlp", "alice", "normal", 0.5, ago(hour/2), time.Time{}),
				run("nlp", "alice", "normal", 8, now.Add(hour), now.Add(2*hour)),
			},
			want: map[Assoc]float64{{"nlp", "alice"}: 0.5 * hs / math.Ln2 * (1 - math.Exp2(-0.5))},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := ComputeUsage(c.runs, c.cfg, now)
			if err != nil {
				t.Fatal(err)
			}
			if len(u.ByUser) != len(c.want) {
				t.Fatalf("usage for %d associations, want %d: %v", len(u.ByUser), len(c.want), u.ByUser)
			}
			for a, want := range c.want {
				got := u.ByUser[a][TRESGPU]
				if math.Abs(got-want) > 1e-3*math.Max(1, want) {
					t.Errorf("%v: %.4f GPU-seconds, want %.4f", a, got, want)
				}
				// Default billing is one unit per GPU.
				if b := u.ByUser[a][TRESBilling]; math.Abs(b-got) > 1e-9 {
					t.Errorf("%v: billing %.4f, want it equal to GPU-seconds %.4f", a, b, got)
				}
			}
			perQueue := map[string]float64{}
			for qp, used := range u.ByQueue {
				if qp.Partition != "h100" {
					t.Errorf("usage charged to partition %q, want the run's h100", qp.Partition)
				}
				perQueue[qp.Queue] += used[TRESGPU]
			}
			hist := u.Historical()
			for a := range c.want {
				if math.Abs(perQueue[a.Account]-hist[a.Account]) > 1e-9 {
					t.Errorf("queue %s: %v GPU-seconds by partition, %v in total", a.Account, perQueue[a.Account], hist[a.Account])
				}
			}
			for a, want := range c.want {
				if math.Abs(hist[a.Account]-want) > 1e-3*math.Max(1, want) {
					t.Errorf("historical usage of %s = %.4f, want %.4f", a.Account, hist[a.Account], want)
				}
			}
		})
	}
}

func TestComputeUsageRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]UsageConfig{
		"negative half-life":  {HalfLife: -time.Hour},
		"negative QOS factor": {QOSUsageFactor: map[string]float64{"normal": -1}},
		"unknown TRES weight": {BillingWeights: map[string]float64{"gres/tpu": 1}},
	} {
		if _, err := ComputeUsage(nil, cfg, time.Now()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestBillingWeights(t *testing.T) {
	cfg := UsageConfig{BillingWeights: map[string]float64{TRESGPU: 10, TRESCPU: 0.5}}
	if got := cfg.Billing(TRES{GPUs: 1.5, CPUs: 8}); got != 19 {
		t.Fatalf("billing %v, want 10*1.5 + 0.5*8 = 19", got)
	}
}
