package cli

import (
	"flag"
	"slices"
	"strings"
	"testing"
)

// ownFlag peels exactly what sbatch's and srun's loops matched before their own
// options became flag sets: anything else goes on to the shared option table.
func TestOwnFlag(t *testing.T) {
	tests := []struct {
		prog, args string
		used       int
		set        string // "name=value" read, "" for none
		err        string
	}{
		{"sbatch", "--parsable job.sh", 1, "parsable=true", ""},
		{"sbatch", "-W", 1, "W=true", ""},
		{"sbatch", "--wait", 1, "wait=true", ""},
		{"sbatch", "--wait=true", 0, "", ""}, // a switch is matched exactly, as before
		{"sbatch", "-wait", 0, "", ""},
		{"sbatch", "--token t job.sh", 2, "token=t", ""},
		{"sbatch", "--token=t", 1, "token=t", ""},
		{"sbatch", "--token", 0, "", ""}, // no value: the shared table reports it
		{"sbatch", "-p h100", 0, "", ""},
		{"srun", "--pty bash", 1, "pty=true", ""},
		{"salloc", "--pty bash", 0, "", ""}, // srun's alone
		{"srun", "--jobid 12 hostname", 2, "jobid=12", ""},
		{"srun", "--jobid=x", 0, "", `--jobid "x" is not a job id`},
		{"srun", "--jobid=0", 0, "", `--jobid "0" is not a job id`},
	}
	for _, tt := range tests {
		args := strings.Fields(tt.args)
		fs := commands[tt.prog].Flags()
		used, err := ownFlag(fs, args, 0)
		if used != tt.used || (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) {
			t.Errorf("%s %q: used %d, err %v; want %d, %q", tt.prog, args, used, err, tt.used, tt.err)
			continue
		}
		var set []string
		fs.Visit(func(f *flag.Flag) { set = append(set, f.Name+"="+f.Value.String()) })
		if want := slices.DeleteFunc([]string{tt.set}, func(s string) bool { return s == "" }); !slices.Equal(set, want) {
			t.Errorf("%s %q: set %q, want %q", tt.prog, args, set, want)
		}
	}
}
