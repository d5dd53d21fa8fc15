package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Every option sbatch honours in #SBATCH lines is honoured on the command line too:
// each has a REST field in jobFields, or is read elsewhere (wrap: the script; export:
// the environment). An option added to sbatch's table without a field fails here.
func TestEveryHonouredOptionReachesTheJob(t *testing.T) {
	elsewhere := map[string]bool{"wrap": true, "export": true}
	for _, table := range [][]sbatch.Option{sbatch.Table, sbatch.Ignored} {
		for _, opt := range table {
			if opt.Honoured() && jobFields[opt.Long] == nil && !elsewhere[opt.Long] {
				t.Errorf("--%s is honoured in #SBATCH lines but the command line drops it (no entry in jobFields)", opt.Long)
			}
		}
	}
}

// The options the issue found dropped on the command line become the fields the
// server reads for them.
func TestCommandLinePlacementAndSignalOptions(t *testing.T) {
	tests := []struct {
		args []string
		want map[string]string // field -> its JSON
	}{
		{[]string{"-w", "h100-3"}, map[string]string{"required_nodes": `"h100-3"`}},
		{[]string{"--nodelist=h100-[0-1]"}, map[string]string{"required_nodes": `"h100-[0-1]"`}},
		{[]string{"-x", "h100-0"}, map[string]string{"excluded_nodes": `"h100-0"`}},
		{[]string{"--exclusive"}, map[string]string{"shared": `["none"]`}},
		{[]string{"-C", "h100&ib"}, map[string]string{"constraints": `"h100\u0026ib"`}},
		{[]string{"--spread-job"}, map[string]string{"flags": `["SPREAD_JOB"]`}},
		{[]string{"--signal=B:USR1@90"}, map[string]string{"kill_warning_signal": `"10"`,
			"kill_warning_delay": `{"set":true,"infinite":false,"number":90}`, "kill_warning_flags": `["BATCH_JOB"]`}},
		{[]string{"--switches=1@10:00"}, map[string]string{"required_switches": `{"set":true,"infinite":false,"number":1}`,
			"wait_for_switch": `{"set":true,"infinite":false,"number":600}`}},
	}
	for _, tt := range tests {
		opts, _, _, err := sbatch.Parse(append(tt.args, "--wrap", "hostname"))
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		job, err := sbatchJob(opts, "#!/bin/sh\nhostname\n", nil, time.Now())
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		for key, want := range tt.want {
			got, _ := json.Marshal(job[key])
			if string(got) != want {
				t.Errorf("%v: job.%s = %s, want %s", tt.args, key, got, want)
			}
		}
	}
}
