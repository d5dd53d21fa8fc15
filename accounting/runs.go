package accounting

import (
	"sort"
	"time"
)

// Summary is what a job's transitions say about it.
type Summary struct {
	State        JobState
	Start        time.Time // start of the latest run, as sacct shows after a requeue
	End          time.Time // set once the latest state is final or PREEMPTED
	RequeueCount int
	Runs         []Run
}

// stateOrder breaks ties between transitions recorded in the same second
// (Kubernetes timestamps have one-second resolution): a requeue closes the old
// run and sends the job back to PENDING before a new RUNNING opens, and a
// final state closes a run that began in the same second. A preemption is
// ordered by preemptionOrder.
func stateOrder(s JobState) int {
	switch {
	case s == StateRequeued || s == StatePreempted:
		return 0
	case s == StatePending:
		return 1
	case s == StateRunning:
		return 2
	default:
		return 3
	}
}

// SortTransitions orders a job's transitions by time, ties by stateOrder; a
// preemption in a second that no earlier run is open into ends the run that
// began in that second (a pod started and evicted within one second), so it goes
// after that second's RUNNING, where it would otherwise have reopened the run.
func SortTransitions(ts []Transition) {
	sort.SliceStable(ts, func(i, k int) bool {
		if !ts[i].At.Equal(ts[k].At) {
			return ts[i].At.Before(ts[k].At)
		}
		return stateOrder(ts[i].State) < stateOrder(ts[k].State)
	})
	running := false // a run is open before the second at hand
	for first := 0; first < len(ts); {
		end := first + 1
		for end < len(ts) && ts[end].At.Equal(ts[first].At) {
			end++
		}
		if second := ts[first:end]; !running {
			sort.SliceStable(second, func(i, k int) bool {
				return preemptionOrder(second[i].State) < preemptionOrder(second[k].State)
			})
		}
		running = ts[end-1].State == StateRunning
		first = end
	}
}

// preemptionOrder is stateOrder for a second no earlier run is open into: a
// preemption there can only end a run that began in it.
func preemptionOrder(s JobState) int {
	if s == StatePreempted {
		return 3
	}
	return stateOrder(s)
}

// Summarize derives a job's state, runs and requeue count from its history.
// It is a pure function of the set of transitions, so replays and out-of-order
// delivery give the same answer.
func Summarize(ts []Transition) Summary {
	sorted := append([]Transition(nil), ts...)
	SortTransitions(sorted)
	var s Summary
	var open *Run
	for _, t := range sorted {
		s.State = t.State
		if t.State == StateRequeued {
			s.RequeueCount++
		}
		if t.State == StateRunning {
			if open == nil {
				s.Runs = append(s.Runs, Run{JobID: t.JobID, Start: t.At})
				open = &s.Runs[len(s.Runs)-1]
				s.Start = t.At
			}
			continue
		}
		if open != nil {
			open.End = t.At
			open = nil
		}
	}
	// A preemption that is not followed by a requeue ends the job (Slurm's
	// PreemptMode=CANCEL); a later transition undoes this.
	if s.State.Final() && len(sorted) > 0 {
		s.End = sorted[len(sorted)-1].At
	}
	return s
}
