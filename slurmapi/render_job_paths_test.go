package slurmapi

import "testing"

// The job record shows the batch script's streams as scontrol does:
// expanded, absolute, with sbatch's defaults filled in.
func TestRenderJobStreams(t *testing.T) {
	task := 4
	cases := []struct {
		name               string
		job                Job
		stdout, stderr, in string
	}{
		{"pattern expanded against the working directory",
			Job{ID: 120, Desc: JobDesc{Name: "train", User: "alice", WorkDir: "/home/alice", Stdout: "logs/%x-%j.out"}},
			"/home/alice/logs/train-120.out", "/home/alice/logs/train-120.out", "/dev/null"},
		{"no --output: slurm-%j.out",
			Job{ID: 121, Desc: JobDesc{Name: "train", User: "alice", WorkDir: "/home/alice"}},
			"/home/alice/slurm-121.out", "/home/alice/slurm-121.out", "/dev/null"},
		{"array task: slurm-%A_%a.out",
			Job{ID: 130, ArrayJobID: 125, ArrayTaskID: &task, Desc: JobDesc{Name: "sweep", User: "alice", WorkDir: "/w", Array: "0-9"}},
			"/w/slurm-125_4.out", "/w/slurm-125_4.out", "/dev/null"},
		{"step, task and node patterns of the batch step; %N once running",
			Job{ID: 122, NodeNames: []string{"gpu-3", "gpu-4"}, Desc: JobDesc{Name: "t", User: "bob", WorkDir: "/w",
				Stdout: "%J.%s.%n.%t.%N.out", Stderr: "/scratch/%u/%j.err", Stdin: "in/%x.txt"}},
			"/w/122.batch.0.0.gpu-3.out", "/scratch/bob/122.err", "/w/in/t.txt"},
		{"pending: %N stays as written",
			Job{ID: 123, Desc: JobDesc{Name: "t", User: "bob", WorkDir: "/w", Stdout: "%N-%j.out"}},
			"/w/%N-123.out", "/w/%N-123.out", "/dev/null"},
		{"manifest job: fields as given",
			Job{ID: 124, Manifest: true, Desc: JobDesc{Name: "default/x", User: "sa"}},
			"", "", ""},
	}
	for _, c := range cases {
		m := renderJob(&c.job, "sluice")
		if m["standard_output"] != c.stdout || m["standard_error"] != c.stderr || m["standard_input"] != c.in {
			t.Errorf("%s: stdout %q stderr %q stdin %q, want %q %q %q", c.name,
				m["standard_output"], m["standard_error"], m["standard_input"], c.stdout, c.stderr, c.in)
		}
	}
}
