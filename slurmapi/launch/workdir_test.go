package launch

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The batch script runs in the job's working directory; one that is not there sends it
// to /tmp with slurmstepd's message, and it runs on. An output file that cannot be
// opened (its directory is missing: Slurm does not make it) fails the job before the
// script runs, with slurmstepd's message.
func TestBatchWorkDirAndOutputFiles(t *testing.T) {
	base := t.TempDir()
	tests := []struct {
		name       string
		workDir    string
		stdout     string
		wantRC     int
		wantPwd    string // what the script printed as its directory ("" when it must not run)
		wantStderr string
	}{
		{name: "working directory", workDir: base, stdout: filepath.Join(base, "ok.out"), wantPwd: base},
		{name: "missing working directory", workDir: filepath.Join(base, "gone"), stdout: filepath.Join(base, "tmp.out"), wantPwd: "/tmp",
			wantStderr: "slurmstepd: error: couldn't chdir to `" + filepath.Join(base, "gone") + "': No such file or directory: going to /tmp instead"},
		{name: "output directory missing", workDir: base, stdout: filepath.Join(base, "logs", "x-1.out"), wantRC: 1,
			wantStderr: "slurmstepd: error: Could not open stdout file " + filepath.Join(base, "logs", "x-1.out") + ": No such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir()) // Main changes the process's directory, as the pod's launcher does
			env := map[string]string{
				"SLURM_JOB_ID": "1", "SLURM_NODEID": "0", EnvHosts: "h100-0", EnvScript: "#!/bin/sh\npwd -P\n",
				EnvStdout: tt.stdout, EnvWorkDir: tt.workDir, EnvRunDir: t.TempDir(),
				EnvTerminationLog: filepath.Join(t.TempDir(), "termination-log"),
			}
			var stdout, stderr bytes.Buffer
			rc := Main(nil, func(k string) string { return env[k] }, &stdout, &stderr)
			if rc != tt.wantRC {
				t.Errorf("status %d, want %d (stderr %q)", rc, tt.wantRC, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q, want it to say %q", stderr.String(), tt.wantStderr)
			}
			got, _ := os.ReadFile(tt.stdout)
			want, _ := filepath.EvalSymlinks(tt.wantPwd)
			if tt.wantPwd == "" {
				if len(got) != 0 || stdout.Len() != 0 {
					t.Errorf("the script ran: file %q, stdout %q", got, stdout.String())
				}
				return
			}
			if strings.TrimSpace(string(got)) != want {
				t.Errorf("the script ran in %q, want %q", got, want)
			}
		})
	}
}
