package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestPickCommandHonoursSymlinkNames(t *testing.T) {
	tests := []struct {
		argv     []string
		wantName string
		wantArgs int
	}{
		{[]string{"/usr/bin/sluice", "server", "--listen", ":1"}, "server", 2},
		{[]string{"/usr/local/bin/version"}, "version", 0},
		{[]string{"sluice"}, "", 0},
	}
	for _, tt := range tests {
		name, args := pickCommand(tt.argv)
		if name != tt.wantName || len(args) != tt.wantArgs {
			t.Errorf("pickCommand(%q) = %q, %q", tt.argv, name, args)
		}
	}
}

func TestUnknownCommandExitsTwo(t *testing.T) {
	var out, errOut strings.Builder
	if code := runMain([]string{"sluice", "sbatchh"}, &out, &errOut); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), `unknown command "sbatchh"`) {
		t.Errorf("stderr = %q", errOut.String())
	}
}

// A bad option answers as Slurm's commands do: getopt's words, a pointer to --help,
// exit 255; Sluice's own commands keep exit 2.
func TestBadOptionsExitAsSlurm(t *testing.T) {
	tests := []struct {
		argv     []string
		wantCode int
		want     []string
	}{
		{[]string{"sluice", "squeue", "-Z"}, 255, []string{"squeue: invalid option -- 'Z'", `Try "squeue --help" for more information`}},
		{[]string{"sluice", "sinfo", "--colour"}, 255, []string{"sinfo: unrecognized option '--colour'"}},
		{[]string{"sluice", "squeue", "-u"}, 255, []string{"squeue: option requires an argument -- 'u'"}},
		{[]string{"sluice", "sinfo", "-t", "sleepy"}, 255, []string{"sinfo: invalid node state specified: sleepy"}},
		{[]string{"sluice", "token", "--colour"}, 2, []string{"sluice token:", "Run 'sluice token --help'"}},
	}
	for _, tt := range tests {
		var errOut bytes.Buffer
		code := runMain(tt.argv, io.Discard, &errOut)
		if code != tt.wantCode {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tt.argv, code, tt.wantCode, errOut.String())
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut.String(), w) {
				t.Errorf("%q: stderr %q lacks %q", tt.argv, errOut.String(), w)
			}
		}
	}
}

// TestSlurmToolNamesRunTheirSubcommand: a symlink named after any Slurm
// tool (ln -s sluice /usr/local/bin/squeue) runs that subcommand.
func TestSlurmToolNamesRunTheirSubcommand(t *testing.T) {
	for _, tool := range []string{"sbatch", "squeue", "scancel", "sinfo", "scontrol", "sacct", "sshare", "sreport"} {
		if _, ok := commands[tool]; !ok {
			t.Errorf("%s is not a subcommand", tool)
			continue
		}
		name, args := pickCommand([]string{"/usr/local/bin/" + tool, "show", "job"})
		if name != tool || len(args) != 2 {
			t.Errorf("invoked as %s: runs %q with %q", tool, name, args)
		}
	}
}
