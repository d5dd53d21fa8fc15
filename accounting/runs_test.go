package accounting

import (
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	base := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	tr := func(s int, st JobState) Transition { return Transition{JobID: 1, At: at(s), State: st} }
	cases := []struct {
		name     string
		ts       []Transition
		state    JobState
		start    time.Time
		end      time.Time
		requeues int
		held     time.Duration // total of closed runs
		openRuns int
	}{
		{"still pending", []Transition{tr(0, StatePending)}, StatePending, time.Time{}, time.Time{}, 0, 0, 0},
		{"running", []Transition{tr(0, StatePending), tr(5, StateRunning)}, StateRunning, at(5), time.Time{}, 0, 0, 1},
		{"completed", []Transition{tr(0, StatePending), tr(5, StateRunning), tr(65, StateCompleted)}, StateCompleted, at(5), at(65), 0, 60 * time.Second, 0},
		{"zero-second job in one second", []Transition{tr(5, StateCompleted), tr(5, StateRunning)}, StateCompleted, at(5), at(5), 0, 0, 0},
		{"requeued in the same second it restarts", []Transition{
			tr(0, StateRunning), tr(100, StateRunning), tr(100, StatePending), tr(100, StateRequeued), tr(150, StateTimeout),
		}, StateTimeout, at(100), at(150), 1, 150 * time.Second, 0},
		{"node failure ends it", []Transition{tr(0, StateRunning), tr(30, StateNodeFail)}, StateNodeFail, at(0), at(30), 0, 30 * time.Second, 0},
		{"preempted, back to pending", []Transition{tr(0, StateRunning), tr(40, StatePreempted), tr(41, StatePending)}, StatePending, at(0), time.Time{}, 0, 40 * time.Second, 0},
		{"preempted for good", []Transition{tr(0, StateRunning), tr(40, StatePreempted)}, StatePreempted, at(0), at(40), 0, 40 * time.Second, 0},
		// A bare pod started and evicted within one second: the preemption ends the run.
		{"started and preempted in one second", []Transition{tr(0, StatePending), tr(5, StatePreempted), tr(5, StateRunning)}, StatePreempted, at(5), at(5), 0, 0, 0},
		{"submitted, started and preempted in one second", []Transition{tr(5, StatePreempted), tr(5, StateRunning), tr(5, StatePending)}, StatePreempted, at(5), at(5), 0, 0, 0},
		// A run open from before: the preemption closes it, and the job is requeued and
		// starts again within that second.
		{"preempted, requeued and restarted in one second", []Transition{
			tr(0, StateRunning), tr(40, StateRunning), tr(40, StatePending), tr(40, StatePreempted),
		}, StateRunning, at(40), time.Time{}, 0, 40 * time.Second, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Summarize(c.ts)
			var held time.Duration
			open := 0
			for _, r := range s.Runs {
				if r.End.IsZero() {
					open++
					continue
				}
				held += r.End.Sub(r.Start)
			}
			if s.State != c.state || !s.Start.Equal(c.start) || !s.End.Equal(c.end) || s.RequeueCount != c.requeues || held != c.held || open != c.openRuns {
				t.Fatalf("got state %s start %v end %v requeues %d held %s open %d\nwant %s %v %v %d %s %d",
					s.State, s.Start, s.End, s.RequeueCount, held, open, c.state, c.start, c.end, c.requeues, c.held, c.openRuns)
			}
		})
	}
}

func TestParseJobState(t *testing.T) {
	for in, want := range map[string]JobState{"cd": StateCompleted, "running": StateRunning, "OOM": StateOutOfMemory, "NODE_FAIL": StateNodeFail} {
		if got, err := ParseJobState(in); err != nil || got != want {
			t.Errorf("ParseJobState(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := ParseJobState("BOOTING"); err == nil {
		t.Error("ParseJobState(BOOTING) accepted a state Slurm's accounting does not record")
	}
}

func TestTRES(t *testing.T) {
	// sacct's AllocTRES: Slurm's names in Slurm's order; gres/gpumem only where
	// the job holds part of a GPU, which Slurm's form cannot say.
	for _, tc := range []struct {
		name string
		tres TRES
		want string
	}{
		{"whole GPUs read as in Slurm", TRES{CPUs: 16, MemMB: 131072, GPUs: 2, GPUMemMB: 2 * 81920, Nodes: 1, Billing: 2},
			"billing=2,cpu=16,gres/gpu=2,mem=128G,node=1"},
		{"a GPU and a half says how much memory", TRES{CPUs: 8, MemMB: 64000, GPUs: 1.5, GPUMemMB: 40960, Nodes: 1, Billing: 1.5},
			"billing=1.5,cpu=8,gres/gpu=1.5,gres/gpumem=40G,mem=64000M,node=1"},
		{"half a GPU", TRES{CPUs: 4, GPUs: 0.5, GPUMemMB: 40960, Nodes: 1}, "cpu=4,gres/gpu=0.5,gres/gpumem=40G,node=1"},
		{"GPU memory asked for alone", TRES{CPUs: 4, GPUMemMB: 20000, Nodes: 1}, "cpu=4,gres/gpumem=20000M,node=1"},
		{"no GPU", TRES{CPUs: 2, MemMB: 4000, Nodes: 1}, "cpu=2,mem=4000M,node=1"},
	} {
		if got := tc.tres.String(); got != tc.want {
			t.Errorf("%s: String() = %q, want %q", tc.name, got, tc.want)
		}
	}
	for in, want := range map[string]string{"": "gres/gpu", "gpu,cpu": "gres/gpu,cpu", "GRES/GPU,mem": "gres/gpu,mem"} {
		got, err := ParseTRESList(in)
		if err != nil || joinNames(got) != want {
			t.Errorf("ParseTRESList(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if _, err := ParseTRESList("gres/tpu"); err == nil {
		t.Error("ParseTRESList accepted an unknown TRES")
	}
}

func joinNames(ns []string) string {
	out := ""
	for i, n := range ns {
		if i > 0 {
			out += ","
		}
		out += n
	}
	return out
}
