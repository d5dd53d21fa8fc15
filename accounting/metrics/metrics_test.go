package metrics

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/store"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func ago(s int) time.Time { return now.Add(-time.Duration(s) * time.Second) }

// ledger: alice's 2-GPU nlp job ran 1000 s; bob's half-GPU vision job has run 400 s and
// still runs; carol's nlp job waits.
func ledger(t *testing.T) accounting.Store {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	job := func(id int64, user, account, part string, gpus float64, st accounting.JobState, start, end time.Time) accounting.Job {
		return accounting.Job{JobID: id, ArrayTaskID: -1, Name: "j", User: user, Account: account, Partition: part,
			Origin: accounting.OriginSlurm, Submit: ago(3000), State: st, Start: start, End: end,
			Requested: accounting.TRES{GPUs: gpus, Nodes: 1}, Allocated: accounting.TRES{GPUs: gpus, Nodes: 1}}
	}
	jobs := []accounting.Job{
		job(1, "alice", "nlp", "h100", 2, accounting.StateCompleted, ago(2000), ago(1000)),
		job(2, "bob", "vision", "a100", 0.5, accounting.StateRunning, ago(400), time.Time{}),
		job(3, "carol", "nlp", "h100", 1, accounting.StatePending, time.Time{}, time.Time{}),
	}
	jobs[2].Allocated = accounting.TRES{}
	if err := s.UpsertJobs(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	return s
}

// values gathers the registry into "name{label=value,...}" -> value.
func values(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}

func TestCollectorReportsTheLedger(t *testing.T) {
	db := ledger(t)
	c, err := New(Config{Store: db, Clock: func() time.Time { return now },
		Assocs: func(context.Context) ([]accounting.ShareAssoc, error) {
			return []accounting.ShareAssoc{{Account: "nlp", Shares: 1}, {Account: "vision", Shares: 1},
				{Account: "nlp", User: "alice", Shares: 1}, {Account: "vision", User: "bob", Shares: 1}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := c.Register(reg); err != nil {
		t.Fatal(err)
	}
	got := values(t, reg)
	want := map[string]float64{
		"sluice_accounting_gpu_seconds_total{account=nlp,partition=h100}":    2000,
		"sluice_accounting_gpu_seconds_total{account=vision,partition=a100}": 200,
		"sluice_accounting_gpus_allocated{account=vision}":                   0.5,
		"sluice_accounting_jobs{state=COMPLETED}":                            1,
		"sluice_accounting_jobs{state=RUNNING}":                              1,
		"sluice_accounting_jobs{state=PENDING}":                              1,
		"sluice_accounting_jobs{state=FAILED}":                               0,
		"sluice_accounting_fairshare_norm_shares{account=nlp}":               0.5,
		"sluice_accounting_fairshare_norm_shares{account=vision}":            0.5,
		"sluice_accounting_scrape_errors_total{}":                            0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if _, ok := got["sluice_accounting_gpus_allocated{account=nlp}"]; ok {
		t.Error("nlp holds no GPUs now but is reported")
	}
	// vision used less than nlp (decayed), so it stands higher in the Fair Tree.
	if got["sluice_accounting_fairshare_level_fs{account=vision}"] <= got["sluice_accounting_fairshare_level_fs{account=nlp}"] {
		t.Errorf("LevelFS vision %v <= nlp %v", got["sluice_accounting_fairshare_level_fs{account=vision}"], got["sluice_accounting_fairshare_level_fs{account=nlp}"])
	}
	if got["sluice_accounting_fairshare_factor{account=vision,user=bob}"] <= got["sluice_accounting_fairshare_factor{account=nlp,user=alice}"] {
		t.Error("bob (vision) should outrank alice (nlp)")
	}
}

// A scrape within MinInterval of the last reading serves it again; the ledger is read
// once.
func TestCollectorCachesReadings(t *testing.T) {
	db := ledger(t)
	clock := now
	c, err := New(Config{Store: db, Clock: func() time.Time { return clock }, MinInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := c.Register(reg); err != nil {
		t.Fatal(err)
	}
	first := values(t, reg)["sluice_accounting_gpu_seconds_total{account=vision,partition=a100}"]
	clock = now.Add(30 * time.Second)
	cached := values(t, reg)["sluice_accounting_gpu_seconds_total{account=vision,partition=a100}"]
	clock = now.Add(2 * time.Minute)
	fresh := values(t, reg)["sluice_accounting_gpu_seconds_total{account=vision,partition=a100}"]
	if first != 200 || cached != 200 || fresh != 200+0.5*120 {
		t.Errorf("vision GPU-seconds %v, %v (30 s later, cached), %v (2 min later); want 200, 200, 260", first, cached, fresh)
	}
}

func TestNewRejectsNoStore(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without a store: no error")
	}
}
