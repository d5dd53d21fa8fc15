package bridge

import (
	"cmp"
	"strings"
	"testing"
	"time"
)

// TestPendingOrderKeys: the keys copied out of the jobs order them as the jobs themselves
// compare: priority first (higher first), then submit time as Time.Compare says (zero
// times, times before 1970 and sub-second differences included), then id.
func TestPendingOrderKeys(t *testing.T) {
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	jobs := []Job{
		{ID: "a", SubmitTime: base},
		{ID: "b", SubmitTime: base.Add(time.Nanosecond)},
		{ID: "c", SubmitTime: base.Add(-time.Nanosecond)},
		{ID: "d"}, // zero time: before everything
		{ID: "e", SubmitTime: time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		{ID: "f", SubmitTime: time.Date(1969, 12, 31, 23, 59, 59, 1, time.UTC)},
		{ID: "g", SubmitTime: base, Priority: 1},
		{ID: "h", SubmitTime: base.In(time.FixedZone("x", 3600))}, // same instant as a
		{ID: "i", SubmitTime: base.Add(time.Second - 1)},
	}
	for _, byID := range []bool{true, false} {
		c := &cycle{jobsByID: byID, jobs: make([]jobState, len(jobs))}
		for i := range jobs {
			c.jobs[i] = jobState{job: &jobs[i], prio: int64(jobs[i].Priority)}
		}
		for a := range jobs {
			for b := range jobs {
				ja, jb := &jobs[a], &jobs[b]
				want := cmp.Compare(jb.Priority, ja.Priority)
				if want == 0 {
					want = ja.SubmitTime.Compare(jb.SubmitTime)
				}
				if want == 0 {
					want = strings.Compare(ja.ID, jb.ID)
				}
				got := c.pendingBefore(c.pendingKeyOf(int32(a)), c.pendingKeyOf(int32(b)))
				if got != want {
					t.Errorf("byID=%v: %s vs %s: got %d, want %d", byID, ja.ID, jb.ID, got, want)
				}
			}
		}
	}
}
