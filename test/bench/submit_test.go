package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// TestSubmitBenchmarkSeesEveryJob runs the submission benchmark small: 200 held and 200
// runnable jobs to sluice server on a rig (and to slurmrestd where installed). Each run
// must have every submission acknowledged and every job seen by the scheduler and listed
// by squeue; speed is for `sluice bench --submit`, never asserted here.
func TestSubmitBenchmarkSeesEveryJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two rigs")
	}
	if _, err := assetPath("", "kube-apiserver"); err != nil {
		t.Skip(err)
	}
	results, err := RunSubmit(context.Background(), SubmitOptions{Jobs: []int{200}, SluiceBinary: sluiceproc.Binary(t), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(results, func(r SubmitResult) bool { return r.Target == TargetSluice }) {
		t.Fatalf("no Sluice run in %+v", results)
	}
	for _, r := range results {
		if r.Acked != r.Jobs || r.Failed != 0 {
			t.Errorf("%s %s: %d of %d acknowledged, %d failed (first: %s)", r.Target, r.Kind, r.Acked, r.Jobs, r.Failed, r.FirstError)
		}
		if r.ToScheduler < 0 || r.ToSqueue < 0 {
			t.Errorf("%s %s: not every job visible: scheduler %s, squeue %s", r.Target, r.Kind, r.ToScheduler, r.ToSqueue)
		}
		if r.Target == TargetSluice && r.Writes["POST configmaps"] == 0 {
			t.Errorf("sluice %s: no batch written: %v", r.Kind, r.Writes)
		}
	}
}

// TestSendSubmissionsCountsEveryAnswer sends to a real HTTP server that refuses every
// tenth submission: each answer is counted once, as acknowledged (with its id) or failed.
func TestSendSubmissionsCountsEveryAnswer(t *testing.T) {
	var ids atomic.Uint32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Test") != "yes" || len(body) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		id := ids.Add(1)
		if id%10 == 0 {
			http.Error(w, `{"errors":[{"error":"refused"}]}`, http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, `{"job_id":%d,"errors":[{"error_code":2042}]}`, id)
	}))
	defer srv.Close()
	load := sendSubmissions(context.Background(), submitTarget{url: srv.URL, headers: map[string]string{"X-Test": "yes"},
		body: func(i int) []byte { return []byte(fmt.Sprint(i)) }}, 300, 16)
	if load.acked != 270 || load.failed != 30 || len(load.ids) != 270 || load.firstErr == "" {
		t.Fatalf("acked %d failed %d ids %d first error %q; want 270, 30, 270 and an error", load.acked, load.failed, len(load.ids), load.firstErr)
	}
	if !slices.IsSorted(load.latency) || load.quantile(0.5) > load.quantile(0.99) {
		t.Fatalf("latencies not in order: p50 %s p99 %s", load.quantile(0.5), load.quantile(0.99))
	}
	slices.Sort(load.ids)
	if len(slices.Compact(load.ids)) != 270 {
		t.Fatal("a job id was counted twice")
	}
}

func TestParseSchedulerSumsPendingReasons(t *testing.T) {
	raw := []byte(`# HELP sluice_scheduler_pending_jobs x
sluice_scheduler_pending_jobs{reason="JobHeldUser"} 40
sluice_scheduler_pending_jobs{reason="Resources"} 2
sluice_scheduler_pods_bound_total 8
sluice_scheduler_cycle_duration_seconds_count 3
sluice_scheduler_cycle_duration_seconds_sum 0.5
`)
	got := parseScheduler(raw)
	if got != (schedulerReading{cycles: 3, pending: 42, bound: 8}) {
		t.Fatalf("got %+v", got)
	}
}
