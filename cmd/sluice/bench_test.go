package main

import (
	"strings"
	"testing"
)

// Flags a run cannot honour are refused before any rig starts: --claims with the bare
// binder, which binds without allocating claims, among them.
func TestBenchRefusesBadOptions(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--claims", "--only", "bare"}, "binds without allocating resource claims"},
		{[]string{"--claims", "--only", "sluice,bare,kube-scheduler"}, "binds without allocating resource claims"},
		{[]string{"--claims", "--only", "sluice", "--nodes", "1", "--pods", "9"}, "do not fit"},
		{[]string{"--claims", "--only", "slurm"}, "unknown contender"},
		{[]string{"--claims", "extra"}, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			err := runBench(tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("runBench(%q) = %v, want an error with %q", tt.args, err, tt.wantErr)
			}
		})
	}
}
