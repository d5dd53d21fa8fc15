package launch

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A rerun of the batch script (a requeued job's next run) truncates its
// output file, as Slurm does by default (JobFileAppend=0), unless the job
// asked for --open-mode=append.
func TestBatchOutputOpenMode(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want string
	}{
		{"", "run\n"},
		{OpenTruncate, "run\n"},
		{OpenAppend, "run\nrun\n"},
	} {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "slurm-1.out")
			env := map[string]string{
				"SLURM_JOB_ID": "1", "SLURM_NODEID": "0", EnvHosts: "h100-0", EnvScript: "#!/bin/sh\necho run\n",
				EnvStdout: out, EnvOpenMode: tc.mode, EnvTerminationLog: filepath.Join(dir, "termination-log"),
			}
			for run := range 2 {
				env[EnvRunDir] = t.TempDir() // each run's pod has its own
				if rc := Main(nil, func(k string) string { return env[k] }, io.Discard, io.Discard); rc != 0 {
					t.Fatalf("run %d: status %d", run, rc)
				}
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("after two runs the output file has %q, want %q", b, tc.want)
			}
		})
	}
}

// Steps' own output files (srun -o with %t) follow the job's open mode,
// which srun takes from SLURM_OPEN_MODE as sbatch exports it.
func TestStepOutputOpenMode(t *testing.T) {
	for _, mode := range []string{"", "a", "t"} {
		dir := t.TempDir()
		spec := StepSpec{JobID: "1", Argv: []string{"true"}, Cwd: dir, Nodes: []string{"h"}, NTasks: 1,
			Tasks: []TaskSlot{{}}, Output: "out-%t", Env: []string{"SLURM_OPEN_MODE=" + mode}}
		path := filepath.Join(dir, "out-0")
		if err := os.WriteFile(path, []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, _, closeFiles, err := taskOutput(&Job{ID: "1", Hosts: []string{"h"}}, spec, spec.Tasks[0], func(event) {})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(stdout, "after\n")
		closeFiles()
		b, _ := os.ReadFile(path)
		want := "after\n"
		if mode == "a" {
			want = "before\nafter\n"
		}
		if string(b) != want {
			t.Errorf("SLURM_OPEN_MODE=%q: file has %q, want %q", mode, b, want)
		}
	}
}
