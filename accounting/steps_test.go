package accounting

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStepsMessageRoundTrips(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	in := []Step{
		{JobID: 42, StepID: "batch", Name: "batch", State: StateFailed, ExitCode: 3, Start: t0, End: t0.Add(time.Minute), Tasks: 1, NodeList: "job-42-0", TRES: TRES{CPUs: 1, Nodes: 1}},
		{JobID: 42, StepID: "0", Name: "python train.py", State: StateCancelled, Signal: 9, Start: t0, End: t0.Add(30 * time.Second), Tasks: 16, NodeList: "job-42-[0-1]", TRES: TRES{CPUs: 64, GPUs: 16, Nodes: 2}},
	}
	got, err := DecodeSteps(42, EncodeSteps(in))
	if err != nil {
		t.Fatal(err)
	}
	in[1].Name = "python_train.py" // names are one word in the message
	if len(got) != 2 || got[0] != in[0] || got[1] != in[1] {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, in)
	}
	if s, err := DecodeSteps(42, "killed by the OOM killer"); s != nil || err != nil {
		t.Errorf("a container's own message is not a step report: %v %v", s, err)
	}
	if _, err := DecodeSteps(42, StepsMessageHeader+"\n0 COMPLETED x\n"); err == nil {
		t.Error("a malformed line is an error")
	}
}

// TestStepsMessageFitsTheKubeletLimit: a job with more steps than fit
// keeps the batch step and the newest steps within 4096 bytes.
func TestStepsMessageFitsTheKubeletLimit(t *testing.T) {
	var in []Step
	in = append(in, Step{JobID: 7, StepID: "batch", Name: "batch", State: StateCompleted})
	for i := range 500 {
		in = append(in, Step{JobID: 7, StepID: strconv.Itoa(i), Name: "hostname", State: StateCompleted})
	}
	msg := EncodeSteps(in)
	if len(msg) > StepsMessageLimit {
		t.Fatalf("message of %d bytes", len(msg))
	}
	got, err := DecodeSteps(7, msg)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].StepID != "batch" || got[len(got)-1].StepID != "499" || len(got) < 50 {
		t.Errorf("kept %d steps: first %s last %s", len(got), got[0].StepID, got[len(got)-1].StepID)
	}
}

// TestStepsMessageRefusesOutOfRangeNumbers: a step report is the job's own
// words; numbers the ledger's columns cannot hold (in SQLite or PostgreSQL)
// are refused when read, so one report can never make a ledger write fail.
func TestStepsMessageRefusesOutOfRangeNumbers(t *testing.T) {
	good := EncodeSteps([]Step{{JobID: 7, StepID: "0", Name: "x", State: StateCompleted, Tasks: 1, NodeList: "n", TRES: TRES{CPUs: 1, GPUs: 1, Nodes: 1}}})
	if s, err := DecodeSteps(7, good); err != nil || len(s) != 1 {
		t.Fatalf("the unchanged report: %v %v", s, err)
	}
	lines := strings.Split(strings.TrimSpace(good), "\n")
	for _, tc := range []struct {
		field int
		value string
	}{
		{0, "2147483648"}, {2, "256"}, {2, "-1"}, {3, "300"}, {6, "9999999999"}, {7, "-4"},
		{8, "NaN"}, {8, "+Inf"}, {8, "-1"}, {9, "4294967296"},
	} {
		f := strings.Fields(lines[len(lines)-1])
		f[tc.field] = tc.value
		msg := strings.Join(append(lines[:len(lines)-1:len(lines)-1], strings.Join(f, " ")), "\n")
		if s, err := DecodeSteps(7, msg); err == nil {
			t.Errorf("field %d = %s: read as %+v, want an error", tc.field+1, tc.value, s)
		}
	}
}
