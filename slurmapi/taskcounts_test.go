package slurmapi

import (
	"slices"
	"testing"
)

// The per-node counts of SLURM_TASKS_PER_NODE and SLURM_JOB_CPUS_PER_NODE
// are written and read back in Slurm's COUNT(xN) form.
func TestRepeatedCounts(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		text   string
	}{
		{[]int{4}, "4"},
		{[]int{2, 2, 2, 1}, "2(x3),1"},
		{[]int{3, 2}, "3,2"},
		{[]int{1, 4, 4}, "1,4(x2)"},
	} {
		if got := RepeatedCounts(tc.counts); got != tc.text {
			t.Errorf("RepeatedCounts(%v) = %q, want %q", tc.counts, got, tc.text)
		}
		if got := ExpandCounts(tc.text); !slices.Equal(got, tc.counts) {
			t.Errorf("ExpandCounts(%q) = %v, want %v", tc.text, got, tc.counts)
		}
	}
	for _, bad := range []string{"x", "2(x0)", "-1", "2(xa)", "4(x99999999)"} {
		if got := ExpandCounts(bad); got != nil {
			t.Errorf("ExpandCounts(%q) = %v, want nil", bad, got)
		}
	}
}
