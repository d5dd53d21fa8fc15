package kube

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/scheduler"
	"github.com/sluicehq/sluice/test/e2e"
)

const (
	oneGPUJob     = `{"script":"#!/bin/bash\n#SBATCH -J one -N 1 --gres=gpu:h100:1 -t 30\nsrun hostname\n","job":{"environment":["PATH=/bin"]}}`
	heldOneGPUJob = `{"script":"#!/bin/bash\n#SBATCH -J held -H -N 1 --gres=gpu:h100:1 -t 30\nsrun hostname\n","job":{"environment":["PATH=/bin"]}}`
)

// TestPendingJobsStayInBatchesOnRig runs what `sluice server` runs: the scheduler reading
// pending jobs from the submit batches and the submit queue keeping them there. Held jobs
// are seen by the scheduler (its pending gauge) and get no PodGroup while they wait; a
// runnable job gets its PodGroup when it starts and runs; a job with a dependency and the
// job it names are stored by the queue, for the lifecycle; a released job is stored and
// starts; a batch whose jobs are all stored is removed.
func TestPendingJobsStayInBatchesOnRig(t *testing.T) {
	ts, b := batchServer(t, 20*time.Millisecond)
	reg := prometheus.NewRegistry()
	runKeeping(t, b, reg, nil)

	held := submitAll(t, ts, 3, heldOneGPUJob)
	dependent := submitAll(t, ts, 1, strings.Replace(heldOneGPUJob, `"job":{`, fmt.Sprintf(`"job":{"dependency":"afterok:%d",`, held[0]), 1))[0]
	runnable := submitAll(t, ts, 1, oneGPUJob)[0]

	waitFor(t, "the scheduler to see the 4 held jobs", func() bool { return heldGauge(t, reg) >= 4 })
	for _, id := range held[1:] {
		if pg := storedGroup(t, b, id); pg != nil {
			t.Errorf("held job %d waits as a PodGroup (%s), want it kept in its batch", id, pg.Name)
		}
		if j := jobOf(t, ts, id); j["job_state"].([]any)[0] != "PENDING" {
			t.Errorf("held job %d reads as %v", id, j["job_state"])
		}
	}
	waitFor(t, "the runnable job to be stored and start", func() bool {
		pg := storedGroup(t, b, runnable)
		return pg != nil && pg.Status.Phase == v1alpha1.PodGroupRunning
	})
	waitFor(t, "the dependent job and the job it names to be stored", func() bool {
		return storedGroup(t, b, dependent) != nil && storedGroup(t, b, held[0]) != nil
	})
	if status, doc := call(t, ts, "alice", "POST", fmt.Sprintf("/slurm/v0.0.45/job/%d", held[1]), `{"hold":false}`); status != http.StatusOK {
		t.Fatalf("release: %d %v", status, doc)
	}
	waitFor(t, "the released job to start", func() bool {
		pg := storedGroup(t, b, held[1])
		return pg != nil && pg.Status.Phase == v1alpha1.PodGroupRunning
	})
	// Every job but held[2] is stored now: only its batch may be left.
	waitFor(t, "the stored jobs' batches to be removed", func() bool {
		for _, cm := range batches(t, b) {
			if _, ok := cm.Data[fmt.Sprint(held[2])]; !ok {
				return false
			}
		}
		return true
	})
	if pg := storedGroup(t, b, held[2]); pg != nil {
		t.Errorf("held job %d was stored while it waits", held[2])
	}
}

// runKeeping runs what `sluice server` runs for b's batches until the test ends: the
// scheduler reading pending jobs from them (its metrics into reg), the lifecycle, and the
// submit queue keeping the jobs there. The scheduler sees the whole rig, so the Slurm jobs
// earlier tests left in slurm-nlp are cleared first (they would compete for its GPUs), and
// this test's when it ends. more, when not nil, adds components made with the scheduler
// (the recorder reading its batches), run and stopped with the others.
func runKeeping(t *testing.T, b *Backend, reg prometheus.Registerer, more func(*scheduler.Scheduler) map[string]func(context.Context) error) {
	t.Helper()
	clearSlurmJobs(t, b)
	cfg := e2e.Rig(t).RESTConfig()
	factory, err := NewPodFactory(cfg, PodOptions{LaunchKeySeed: rigKey}) // opens what the backend sealed
	if err != nil {
		t.Fatal(err)
	}
	sched, err := scheduler.New(scheduler.Config{SubmitBatchNamespace: b.opts.Namespace}, cfg, reg, factory)
	if err != nil {
		t.Fatal(err)
	}
	life, err := NewLifecycle(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewSubmitQueue(cfg, b.opts)
	if err != nil {
		t.Fatal(err)
	}
	q.KeepPending(sched.SubmitBatches, b.c)
	runs := map[string]func(context.Context) error{"scheduler": sched.Run, "lifecycle": life.Run, "submit queue": q.Run}
	if more != nil {
		maps.Copy(runs, more(sched))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for name, run := range runs {
		wg.Go(func() {
			if err := run(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		clearSlurmJobs(t, b)
	})
}

// clearSlurmJobs removes every Slurm job's PodGroup and pods in slurm-nlp. The
// pods go too: the rig's garbage collector may not have removed a deleted
// group's pods before the next test reuses their names.
func clearSlurmJobs(t *testing.T, b *Backend) {
	t.Helper()
	ctx := context.Background()
	ns := client.InNamespace(Namespace("nlp"))
	if err := b.c.DeleteAllOf(ctx, &v1alpha1.PodGroup{}, ns, client.HasLabels{v1alpha1.JobIDLabel}); err != nil {
		t.Errorf("removing Slurm jobs' PodGroups: %v", err)
	}
	if err := b.c.DeleteAllOf(ctx, &corev1.Pod{}, ns, client.HasLabels{v1alpha1.JobIDLabel}, client.GracePeriodSeconds(0)); err != nil {
		t.Errorf("removing Slurm jobs' pods: %v", err)
	}
}

// heldGauge is the scheduler's count of jobs waiting held.
func heldGauge(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "sluice_scheduler_pending_jobs" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == scheduler.ReasonJobHeld {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

// waitFor polls done for up to two minutes (a bound for a broken run, not a timing
// assertion) and fails the test with what it waited for.
func waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !done(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}
