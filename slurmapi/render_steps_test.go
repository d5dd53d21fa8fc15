package slurmapi

import (
	"strconv"
	"testing"

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
