package sbatch

import "testing"

func TestExpandFilename(t *testing.T) {
	task := 7
	job := FilenameFields{JobID: 120, Name: "train", User: "alice", Node: "gpu-3"}
	arrayTask := FilenameFields{JobID: 125, Name: "sweep", User: "alice", ArrayJobID: 118, ArrayTaskID: &task, Node: "gpu-1"}
	cases := []struct {
		pattern string
		fields  FilenameFields
		want    string
	}{
		{"slurm-%j.out", job, "slurm-120.out"},
		{"%x-%u-%N.log", job, "train-alice-gpu-3.log"},
		{"slurm-%A_%a.out", arrayTask, "slurm-118_7.out"},
		{"%A.%4a", arrayTask, "118.0007"},
		{"%8j", job, "00000120"},
		{"100%%-%j", job, "100%-120"},
		{"%A_%a", job, "120_4294967294"}, // outside an array, as sbatch
		{"%q-%j", job, "%q-120"},         // unknown patterns stay
		{"ends with %", job, "ends with %"},
		{`no\%jexpand`, job, "no%jexpand"},
		{"%J.%s-%n-%t", job, "120.batch-0-0"},
		{"%3t", job, "000"},
		{"%b", arrayTask, "7"},
		{"%b", FilenameFields{JobID: 1, ArrayJobID: 1, ArrayTaskID: ptr(13)}, "3"},
		{"%N.out", FilenameFields{JobID: 1}, "%N.out"}, // pending: no node yet
	}
	for _, c := range cases {
		if got := ExpandFilename(c.pattern, c.fields); got != c.want {
			t.Errorf("%q: %q, want %q", c.pattern, got, c.want)
		}
	}
}

func ptr(i int) *int { return &i }

func TestExpandPath(t *testing.T) {
	job := FilenameFields{JobID: 120, Name: "train", User: "alice"}
	cases := []struct {
		pattern, workDir, want string
	}{
		{"logs/%x-%j.out", "/home/alice", "/home/alice/logs/train-120.out"},
		{"logs/%x-%j.out", "/home/alice/", "/home/alice/logs/train-120.out"},
		{"/scratch/%u/%j.out", "/home/alice", "/scratch/alice/120.out"},
		{"slurm-%j.out", "", "slurm-120.out"}, // no working directory: left relative
	}
	for _, c := range cases {
		if got := ExpandPath(c.pattern, c.workDir, job); got != c.want {
			t.Errorf("%q in %q: %q, want %q", c.pattern, c.workDir, got, c.want)
		}
	}
}
