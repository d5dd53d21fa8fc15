package cli

import (
	"flag"
	"slices"
	"testing"
)

// Command lines as Slurm's users type them, read as getopt_long reads them.
func TestGetoptArgs(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("u", "", "")
	fs.String("user", "", "")
	fs.String("t", "", "")
	fs.Bool("l", false, "")
	fs.Bool("h", false, "")
	fs.Bool("o", false, "")
	fs.Bool("json", false, "")
	tests := []struct {
		in, want []string
	}{
		{[]string{"-ualice"}, []string{"-u", "alice"}},
		{[]string{"-tPD,R", "-h"}, []string{"-t", "PD,R", "-h"}},
		{[]string{"-lh"}, []string{"-l", "-h"}},
		{[]string{"-lualice"}, []string{"-l", "-u", "alice"}},
		{[]string{"-lu", "alice"}, []string{"-l", "-u", "alice"}},
		{[]string{"--user=alice", "-u", "bob"}, []string{"--user=alice", "-u", "bob"}},
		{[]string{"--user", "-x"}, []string{"--user", "-x"}}, // a value that looks like an option stays a value
		{[]string{"show", "job", "-o", "42"}, []string{"-o", "show", "job", "42"}},
		{[]string{"-json", "show"}, []string{"-json", "show"}},
		{[]string{"-Z", "x"}, []string{"-Z", "x"}},
		{[]string{"--colour"}, []string{"--colour"}},
		{[]string{"update", "nice=-5", "-5"}, []string{"update", "nice=-5", "-5"}},
		{[]string{"-h", "--", "-l", "x"}, []string{"-h", "--", "-l", "x"}},
	}
	for _, tt := range tests {
		if got := getoptArgs(fs, tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("getoptArgs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSinfoStates(t *testing.T) {
	got, err := sinfoStates("IDLE,mix,drain")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"idle", "mixed", "draining", "drained"} {
		if !got[s] {
			t.Errorf("sinfo -t IDLE,mix,drain leaves out %s nodes: %v", s, got)
		}
	}
	if got["allocated"] || got["down"] {
		t.Errorf("sinfo -t IDLE,mix,drain takes in %v", got)
	}
}

func TestSqueueFormatFields(t *testing.T) {
	got, err := formatFromFields("squeue", "JobID,name:30,state:.8", squeueFields)
	if err != nil || got != "%20i%30j%.8T" {
		t.Errorf("squeue -O JobID,name:30,state:.8 = %q, %v; want %%20i%%30j%%.8T", got, err)
	}
	if _, err := formatFromFields("squeue", "jobid,colour", squeueFields); err == nil {
		t.Error("an unknown squeue -O field was accepted")
	}
}
