package bridge

import (
	"slices"
	"testing"
)

func TestDivideDim(t *testing.T) {
	kid := func(quota, want int64, weight float64, prio int32, usage float64) shareKid {
		return shareKid{quota: quota, want: want, weight: weight, priority: prio, usage: usage}
	}
	for _, tc := range []struct {
		name        string
		total       int64
		kids        []shareKid
		usageFactor float64
		want        []int64
	}{
		{"deserved then weights", 10, []shareKid{kid(2, 10, 1, 0, 0), kid(2, 10, 3, 0, 0)}, 0, []int64{4, 6}},
		{"deserved capped by demand, surplus passed on", 10, []shareKid{kid(6, 1, 1, 0, 0), kid(2, 20, 1, 0, 0)}, 0, []int64{1, 9}},
		{"quotas above capacity scale down", 6, []shareKid{kid(4, 10, 1, 0, 0), kid(8, 10, 1, 0, 0)}, 0, []int64{2, 4}},
		{"higher priority band first", 10, []shareKid{kid(0, 8, 1, 0, 0), kid(0, 8, 1, 5, 0)}, 0, []int64{2, 8}},
		{"zero weight gets no over-quota share", 10, []shareKid{kid(1, 10, 0, 0, 0), kid(0, 10, 1, 0, 0)}, 0, []int64{1, 9}},
		{"recent usage cuts the share", 8, []shareKid{kid(0, 8, 1, 0, 3), kid(0, 8, 1, 0, 1)}, 1, []int64{2, 6}},
		{"usage correction never strands capacity", 8, []shareKid{kid(0, 2, 1, 0, 0), kid(0, 8, 1, 0, 100)}, 1, []int64{2, 6}},
		{"nobody wants it", 10, []shareKid{kid(5, 0, 1, 0, 0)}, 0, []int64{0}},
		{"rounding dust is handed out", 10, []shareKid{kid(0, 10, 1, 0, 0), kid(0, 10, 1, 0, 0), kid(0, 10, 1, 0, 0)}, 0, []int64{4, 3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := slices.Clone(tc.kids)
			divideDim(tc.total, ks, tc.usageFactor)
			got := make([]int64, len(ks))
			for i := range ks {
				got[i] = ks[i].got
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
