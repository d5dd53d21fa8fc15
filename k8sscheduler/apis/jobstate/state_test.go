package jobstate

import "testing"

// Which states end a job: every view's Final, and the ledger's Closed, which leaves a
// preempted run open because a requeue may follow.
func TestFinalAndClosed(t *testing.T) {
	for _, tt := range []struct {
		s             State
		final, closed bool
	}{
		{Pending, false, false}, {Running, false, false}, {Requeued, false, false}, {Completing, false, false},
		{Completed, true, true}, {Failed, true, true}, {Cancelled, true, true}, {Timeout, true, true},
		{NodeFail, true, true}, {OutOfMemory, true, true}, {Preempted, true, false},
	} {
		if tt.s.Final() != tt.final || tt.s.Closed() != tt.closed {
			t.Errorf("%s: Final %v Closed %v, want %v %v", tt.s, tt.s.Final(), tt.s.Closed(), tt.final, tt.closed)
		}
	}
}
