package cli

import (
	"errors"
	"strings"
	"testing"
)

func sreport(args []string, out *strings.Builder) error { return runSreport(args, out, ledgerNow) }

// November: alice 20 GPU-h (nlp) + 12 GPU-h (vision, still running), bob 2 GPU-h.
func TestSreportReports(t *testing.T) {
	ledgerServer(t, "alice")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"cluster utilization in hours, flags after the words",
			[]string{"cluster", "Utilization", "start=2026-11-01", "end=2026-12-01", "-t", "hours", "-T", "gres/gpu", "-P", "-n"},
			"sluice|gres/gpu|34|0|0|0|0|34\n"},
		{"top usage",
			[]string{"-t", "hours", "-P", "-n", "user", "TopUsage", "Start=2026-11-01", "End=2026-12-01"},
			"sluice|alice|nlp,vision|gres/gpu|32\nsluice|bob|vision|gres/gpu|2\n"},
		{"one account's users in minutes",
			[]string{"-P", "-n", "cluster", "AccountUtilizationByUser", "Accounts=vision", "start=2026-11-01", "end=2026-12-01"},
			"sluice|root||gres/gpu|2040\nsluice|vision||gres/gpu|840\nsluice|vision|alice|gres/gpu|720\nsluice|vision|bob|gres/gpu|120\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runCLI(t, sreport, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("sreport %v:\n%s\nwant:\n%s", tt.args, got, tt.want)
			}
		})
	}
	banner, err := runCLI(t, sreport, "cluster", "utilization", "start=2026-11-01", "end=2026-12-01", "-t", "percent")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(banner, "Cluster Utilization 2026-11-01T00:00:00 - 2026-11-30T23:59:59") || !strings.Contains(banner, "100.00%") {
		t.Errorf("banner and percent:\n%s", banner)
	}
}

func TestSreportRefusesBadInput(t *testing.T) {
	ledgerServer(t, "alice")
	tests := []struct {
		args  []string
		usage bool
		says  string
	}{
		{[]string{"cluster"}, true, "name one report"},
		{[]string{"cluster", "Utilization", "Colour=red"}, true, "unknown option"},
		{[]string{"cluster", "Utilization", "start=soon"}, true, "invalid time"},
		{[]string{"cluster", "Nonsense"}, false, "unknown report"},
		{[]string{"-t", "fortnights", "cluster", "Utilization"}, false, "unknown time unit"},
		{[]string{"-T", "gres/tpu", "cluster", "Utilization"}, false, "unknown TRES"},
		{[]string{"cluster", "Utilization", "start=2026-11-02", "end=2026-11-01"}, false, "not after start"},
	}
	for _, tt := range tests {
		_, err := runCLI(t, sreport, tt.args...)
		var ue UsageError
		if err == nil || errors.As(err, &ue) != tt.usage || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("sreport %v: error %v, want one saying %q (usage error: %v)", tt.args, err, tt.says, tt.usage)
		}
	}
}
