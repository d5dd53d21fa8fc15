package kube

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/recorder"
	"github.com/sluicehq/sluice/accounting/store"
	"github.com/sluicehq/sluice/k8sscheduler/scheduler"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestLedgerRecordsBatchedJobsOnRig runs what `sluice server` runs on the leader with
// rest.pendingInBatches, the accounting recorder included, reading the batches as the
// scheduler read them. A held job kept in its batch is in the ledger (sacct) as PENDING
// with its submit time before any PodGroup exists; released, it starts and is the same
// one record, RUNNING, with one PENDING transition at that submit time. A held job
// cancelled while batched ends CANCELLED without a start; one whose batch is deleted by
// hand before it was ever stored ends CANCELLED too, never PENDING forever.
func TestLedgerRecordsBatchedJobsOnRig(t *testing.T) {
	ts, b := batchServer(t, 20*time.Millisecond)
	ledger, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ledger.Close() }) // after runKeeping's cleanup has stopped the recorder
	runKeeping(t, b, prometheus.NewRegistry(), func(sched *scheduler.Scheduler) map[string]func(context.Context) error {
		rec, err := recorder.New(recorder.Config{Store: ledger, RESTConfig: e2e.Rig(t).RESTConfig(), FlushInterval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		rec.ReadSubmitBatches(sched.SubmitBatches) // as cmd/sluice wires it
		return map[string]func(context.Context) error{"recorder": rec.Run}
	})
	recorded := func(id uint32) *accounting.Job {
		t.Helper()
		jobs, err := ledger.Jobs(context.Background(), accounting.JobFilter{JobIDs: []int64{int64(id)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) > 1 {
			t.Fatalf("job %d has %d records", id, len(jobs))
		}
		if len(jobs) == 0 {
			return nil
		}
		return &jobs[0]
	}

	held := submitAll(t, ts, 2, heldOneGPUJob)
	release, scancel := held[0], held[1]
	submitted := map[uint32]time.Time{}
	for _, id := range held {
		waitFor(t, fmt.Sprintf("held job %d in the ledger", id), func() bool { return recorded(id) != nil })
		j := recorded(id)
		if pg := storedGroup(t, b, id); pg != nil {
			t.Fatalf("held job %d was stored (%s) while it waits: the test shows nothing", id, pg.Name)
		}
		squeue := jobOf(t, ts, id)
		at := time.Unix(int64(squeue["submit_time"].(map[string]any)["number"].(float64)), 0)
		if j.State != accounting.StatePending || !j.Start.IsZero() || j.Name != "held" || j.User != "alice" || j.Account != "nlp" ||
			!j.Submit.Truncate(time.Second).Equal(at) || j.Requested.GPUs != 1 || j.Origin != accounting.OriginSlurm {
			t.Errorf("batched held job %d recorded as %+v; want PENDING, held by alice in nlp, submitted %s as squeue says, 1 GPU asked", id, j, at)
		}
		submitted[id] = j.Submit
	}

	if status, doc := call(t, ts, "alice", "POST", fmt.Sprintf("/slurm/v0.0.45/job/%d", release), `{"hold":false}`); status != http.StatusOK {
		t.Fatalf("release: %d %v", status, doc)
	}
	waitFor(t, "the released job to be RUNNING in the ledger", func() bool {
		j := recorded(release)
		return j != nil && j.State == accounting.StateRunning
	})
	if j := recorded(release); !j.Submit.Equal(submitted[release]) || j.Start.Before(j.Submit) {
		t.Errorf("released job %+v: want the submit time it had in its batch, %s, and a start after it", j, submitted[release])
	}
	hist, err := ledger.Transitions(context.Background(), int64(release))
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[0].State != accounting.StatePending || !hist[0].At.Equal(submitted[release]) || hist[1].State != accounting.StateRunning {
		t.Errorf("released job's history %+v: want PENDING once at %s, then RUNNING", hist, submitted[release])
	}

	if status, doc := call(t, ts, "alice", "DELETE", fmt.Sprintf("/slurm/v0.0.45/job/%d", scancel), ""); status != http.StatusOK {
		t.Fatalf("scancel: %d %v", status, doc)
	}
	waitFor(t, "the job cancelled while batched to be CANCELLED in the ledger", func() bool {
		j := recorded(scancel)
		return j != nil && j.State == accounting.StateCancelled
	})
	if j := recorded(scancel); !j.Start.IsZero() || j.End.IsZero() || !j.Submit.Equal(submitted[scancel]) {
		t.Errorf("cancelled job %+v: want no start (Unknown), an end, and its batch's submit time", j)
	}

	// A job dropped with its batch before it was ever stored: submitted alone, it has a
	// batch of its own, deleted by hand.
	dropped := submitAll(t, ts, 1, heldOneGPUJob)[0]
	waitFor(t, fmt.Sprintf("held job %d in the ledger", dropped), func() bool { return recorded(dropped) != nil })
	for _, cm := range batches(t, b) {
		if _, ok := cm.Data[fmt.Sprint(dropped)]; !ok {
			continue
		}
		if len(cm.Data) != 1 {
			t.Fatalf("batch %s holds %d jobs, want the dropped job alone", cm.Name, len(cm.Data))
		}
		if err := b.c.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: cm.ObjectMeta}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the job dropped from its batch to be CANCELLED in the ledger", func() bool {
		j := recorded(dropped)
		return j.State == accounting.StateCancelled
	})
	if pg := storedGroup(t, b, dropped); pg != nil {
		t.Errorf("the dropped job was stored (%s)", pg.Name)
	}
}
