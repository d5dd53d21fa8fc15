package cli

import (
	"strings"
	"testing"
)

func TestLogsArgs(t *testing.T) {
	tests := []struct {
		args           []string
		job            string
		follow, stderr bool
		node           int
		problem        string
	}{
		{[]string{"12"}, "12", false, false, 0, ""},
		{[]string{"-f", "12"}, "12", true, false, 0, ""},
		{[]string{"12", "-f", "--error"}, "12", true, true, 0, ""},
		{[]string{"--node", "1", "12_3"}, "12_3", false, false, 1, ""},
		{nil, "", false, false, 0, "no job id"},
		{[]string{"12", "13"}, "", false, false, 0, "one job id"},
		{[]string{"12", "--node=-1"}, "", false, false, 0, "--node"},
		{[]string{"--bogus", "12"}, "", false, false, 0, "bogus"},
	}
	for _, tt := range tests {
		f, job, _, err := parseLogsArgs(tt.args)
		if tt.problem != "" {
			if err == nil || !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("%q: error %v, want one mentioning %q", tt.args, err, tt.problem)
			}
			continue
		}
		if err != nil || job != tt.job || *f.follow != tt.follow || *f.stderr != tt.stderr || *f.node != tt.node {
			t.Errorf("%q: job %q follow %v error %v node %d (%v)", tt.args, job, *f.follow, *f.stderr, *f.node, err)
		}
	}
}
