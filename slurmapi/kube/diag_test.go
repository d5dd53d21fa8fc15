package kube

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi"
)

// TestDiagCountsByJobModelState: sdiag's job counters come from each job's state in the
// job model; every failed end (TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED too) counts
// as failed, and every job that ran as started.
func TestDiagCountsByJobModelState(t *testing.T) {
	ran := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	job := func(state string, started bool, flags ...string) slurmapi.Job {
		j := slurmapi.Job{State: append([]string{state}, flags...)}
		if started {
			j.StartTime = ran
		}
		return j
	}
	jobs := []slurmapi.Job{
		job("PENDING", false), job("PENDING", false, "REQUEUED"),
		job("RUNNING", true),
		job("COMPLETED", true), job("COMPLETED", true, "COMPLETING"),
		job("CANCELLED", false), job("CANCELLED", true),
		job("FAILED", true), job("TIMEOUT", true), job("NODE_FAIL", true), job("OUT_OF_MEMORY", true), job("PREEMPTED", true),
	}
	got := diagCounts(jobs)
	want := slurmapi.Diag{JobsSubmitted: 12, JobsPending: 2, JobsRunning: 1, JobsCompleted: 2, JobsCanceled: 2, JobsFailed: 5, JobsStarted: 9}
	if got != want {
		t.Errorf("diag %+v, want %+v", got, want)
	}
}
