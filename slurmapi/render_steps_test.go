package slurmapi

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// TestLatestStepsPrefersTheBatchHost: a running job's steps as its batch
// host tells them replace the ledger's records of the same steps, one
// record per step, the batch step first and then by number.
func TestLatestStepsPrefersTheBatchHost(t *testing.T) {
	ledger := []accounting.Step{{JobID: 7, StepID: "batch", State: accounting.StateRunning},
		{JobID: 8, StepID: "0", State: accounting.StateCompleted}}
	live := []accounting.Step{{JobID: 7, StepID: "10", State: accounting.StateRunning},
		{JobID: 7, StepID: "2", State: accounting.StateFailed, ExitCode: 3},
		{JobID: 7, StepID: "batch", State: accounting.StateRunning, Name: "batch"}}
	got := latestSteps(append(ledger, live...))
	want := []string{"7.batch", "7.2", "7.10", "8.0"}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %v", got, want)
	}
	for i, st := range got {
		if id := st.StepID; want[i] != itoa64(st.JobID)+"."+id {
			t.Errorf("step %d is %d.%s, want %s", i, st.JobID, id, want[i])
		}
	}
	if got[0].Name != "batch" || got[1].ExitCode != 3 {
		t.Errorf("the batch host's records did not win: %+v", got)
	}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// TestRunningBatchStep: a running batch job whose batch host could not
// be asked (a one-node job) shows its batch step RUNNING since the job
// started; an allocation, an ended job or one whose batch step is known
// gets none added.
func TestRunningBatchStep(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	running := Job{ID: 9, State: []string{"RUNNING"}, StartTime: start, NodeNames: []string{"job-9-0"}, Desc: JobDesc{Script: "#!/bin/sh\n", CPUsPerTask: 4}}
	got := withRunningBatch(running, []accounting.Step{{JobID: 9, StepID: "0", State: accounting.StateCompleted}})
	if len(got) != 2 || got[0].StepID != "batch" || got[0].State != accounting.StateRunning || !got[0].Start.Equal(start) ||
		got[0].NodeList != "job-9-0" || got[0].TRES.CPUs != 4 {
		t.Errorf("running batch job: %+v", got)
	}
	alloc := running
	alloc.Desc.Script = ""
	ended := running
	ended.State = []string{"COMPLETED"}
	known := []accounting.Step{{JobID: 9, StepID: "batch", State: accounting.StateRunning, Name: "batch", NodeList: "x"}}
	for name, c := range map[string]struct {
		job   Job
		steps []accounting.Step
		want  int
	}{"allocation": {alloc, nil, 0}, "ended": {ended, nil, 0}, "known": {running, known, 1}} {
		if got := withRunningBatch(c.job, c.steps); len(got) != c.want || (c.want == 1 && got[0].NodeList != "x") {
			t.Errorf("%s: %+v", name, got)
		}
	}
}
