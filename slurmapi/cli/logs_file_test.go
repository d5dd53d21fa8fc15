package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/client"
)

// sluice logs reads the output file when this machine sees it, and says why not when it
// does not.
func TestOutputFileHere(t *testing.T) {
	dir := t.TempDir()
	out, errFile := filepath.Join(dir, "slurm-7.out"), filepath.Join(dir, "slurm-7.err")
	for _, p := range []string{out, errFile} {
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "gone", "slurm-8.out")
	tests := []struct {
		name     string
		job      client.Job
		stream   string
		wantPath string
		wantWhy  string
	}{
		{"stdout here", client.Job{StdOut: out, StdErr: out}, "", out, ""},
		{"stderr split here", client.Job{StdOut: out, StdErr: errFile}, "stderr", errFile, ""},
		{"stderr shares the file: only the pod log splits it", client.Job{StdOut: out, StdErr: out}, "stderr", "", ""},
		{"not on this machine", client.Job{StdOut: missing}, "", "", "its output file " + missing + " is not on this machine (no such file or directory)"},
		{"a directory", client.Job{StdOut: dir}, "", "", "is not a regular file"},
		{"no file", client.Job{}, "", "", ""},
		{"/dev/null", client.Job{StdOut: "/dev/null"}, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, why := outputFileHere(tt.job, tt.stream)
			if path != tt.wantPath || (tt.wantWhy == "") != (why == "") || !strings.Contains(why, tt.wantWhy) {
				t.Errorf("outputFileHere = %q, %q; want %q, %q", path, why, tt.wantPath, tt.wantWhy)
			}
		})
	}
}
