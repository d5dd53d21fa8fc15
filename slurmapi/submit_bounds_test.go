package slurmapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// sizedCatalog is testCatalog with the rig's nodes known (h100 has four
// 128-CPU, 1 TiB, 8-GPU nodes) and no partition time limit.
func sizedCatalog() *Catalog {
	c := testCatalog()
	h := c.Partitions["h100"]
	h.MaxNodesPerJob, h.MaxTime = 0, 0
	h.NodesKnown, h.NodeCount = true, 4
	h.NodeSizes = []NodeSize{{CPUs: 128, MemoryMiB: 1 << 20, GPUs: 8, Count: 4}}
	return c
}

func jobBody(t *testing.T, job map[string]any, scriptText string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"script": scriptText, "job": job})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSubmitBoundsRefuse: every bound answers 400 with Slurm's error
// number for it, naming the field, before any id is given.
func TestSubmitBoundsRefuse(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	sh := "#!/bin/sh\n"
	cases := []struct {
		name   string
		job    map[string]any
		script string
		number int
		source string
		want   string
	}{
		{"300-character name", map[string]any{"name": long(300)}, sh, ErrRestInvalidJobs, "job.name", "at most 256"},
		{"begin time in the year 10000", map[string]any{"begin_time": map[string]any{"set": true, "number": 253402300800}}, sh, ErrInvalidTimeValue, "job.begin_time", "after the year 9999"},
		{"begin time that wraps", map[string]any{}, sh + "#SBATCH --begin=now+2147483647weeks\n", ErrInvalidTimeValue, "script", "too far ahead"},
		{"name with an escape sequence", map[string]any{"name": "a\x1b[2Jb"}, sh, ErrRestInvalidJobs, "job.name", "control character"},
		{"comment over the limit", map[string]any{"comment": long(1025)}, sh, ErrRestInvalidJobs, "job.comment", "at most 1024"},
		{"stdout path too long", map[string]any{"standard_output": "/" + long(4096)}, sh, ErrPathnameTooLong, "job.standard_output", "at most 4096"},
		{"stderr path too long", map[string]any{"standard_error": "/" + long(4096)}, sh, ErrPathnameTooLong, "job.standard_error", "at most 4096"},
		{"working directory too long", map[string]any{"current_working_directory": "/" + long(4096)}, sh, ErrPathnameTooLong, "job.current_working_directory", "at most 4096"},
		{"image too long", map[string]any{"container_image": long(513)}, sh, ErrRestInvalidJobs, "job.container_image", "at most 512"},
		{"image with a space", map[string]any{"container_image": "ubuntu 24.04"}, sh, ErrRestInvalidJobs, "job.container_image", "spaces"},
		{"GPU type too long", map[string]any{"tres_per_node": "gres/gpu:" + long(64) + ":1", "partition": "a100", "account": "default"}, sh, ErrRestInvalidJobs, "job.tres_per_node", "at most 63"},
		{"empty environment name", map[string]any{"environment": map[string]string{"": "x"}}, sh, ErrRestInvalidJobs, "job.environment", `name "" is invalid`},
		{"environment name with a newline", map[string]any{"environment": map[string]string{"A\nB": "x"}}, sh, ErrRestInvalidJobs, "job.environment", "is invalid"},
		{"environment value with NUL", map[string]any{"environment": map[string]string{"A": "x\x00y"}}, sh, ErrRestInvalidJobs, "job.environment", "NUL"},
		{"environment string of 128 KiB", map[string]any{"environment": map[string]string{"A": long(128 << 10)}}, sh, ErrRestInvalidJobs, "job.environment", "128 KiB"},
		{"environment over the total", map[string]any{"environment": map[string]string{"A": long(100 << 10), "B": long(100 << 10)}}, sh, ErrRestInvalidJobs, "job.environment", "at most 131072"},
		{"oversize script", map[string]any{}, sh + long(MaxScriptBytes), ErrScriptMissing, "script", "at most 131008"},
		{"script with NUL", map[string]any{}, sh + "echo \x00", ErrScriptMissing, "script", "NUL"},
		{"time limit that overflowed", map[string]any{"time_limit": map[string]any{"set": true, "number": 153722868}}, sh, ErrInvalidTimeLimit, "job.time_limit", "between 0 (no limit) and 35791394"},
		{"time limit past what a pod can carry", map[string]any{"time_limit": sbatch.MaxTimeLimitMinutes + 1}, sh, ErrInvalidTimeLimit, "job.time_limit", "between 0"},
		{"negative time limit", map[string]any{"time_limit": -5}, sh, ErrInvalidTimeLimit, "job.time_limit", "between 0"},
		{"directive time limit that overflowed", map[string]any{}, sh + "#SBATCH -t 999999999:00:00\n", ErrRestInvalidJobs, "script", "too long"},
		{"nodes 1048576", map[string]any{"nodes": "1048576"}, sh, ErrInvalidNodeCount, "job.minimum_nodes", "has 4 nodes, the job asks for 1048576"},
		{"nodes beyond any count", map[string]any{"nodes": "99999999999"}, sh, ErrInvalidNodeCount, "job.nodes", "MIN-MAX"},
		{"more GPUs per node than a node has", map[string]any{"tres_per_node": "gres/gpu:16"}, sh, ErrNodeConfigUnavailable, "job.tres_per_node", "largest node has 8"},
		{"more CPUs per node than a node has", map[string]any{"cpus_per_task": 129}, sh, ErrNodeConfigUnavailable, "job.cpus_per_task", "largest node has 128"},
		{"more memory per node than a node has", map[string]any{"memory_per_node": 2 << 20}, sh, ErrNodeConfigUnavailable, "job.memory_per_node", "largest node has 1048576"},
		{"memory per CPU times CPUs over a node", map[string]any{"memory_per_cpu": 1 << 20, "cpus_per_task": 2}, sh, ErrNodeConfigUnavailable, "job.memory_per_node", "largest node"},
		{"memory beyond int64 bytes", map[string]any{"memory_per_node": int64(1) << 50}, sh, ErrInvalidTaskMemory, "job.memory_per_node", "more memory than any node"},
		{"GPU count beyond any count", map[string]any{"tres_per_node": "gres/gpu:4611686018427387904"}, sh, ErrInvalidGRES, "job.tres_per_node", "between 0 and"},
		{"tasks that multiply past the bound", map[string]any{"tasks_per_node": 1 << 20, "nodes": "2"}, sh, ErrBadTaskCount, "job.tasks", "at most"},
		{"array above MaxArraySize", map[string]any{"array": "0-1001"}, sh, ErrInvalidArray, "job.array", "below MaxArraySize 1001"},
		{"array spec too long", map[string]any{"array": strings.Repeat("1,", 200) + "1"}, sh, ErrRestInvalidJobs, "job.array", "at most 256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := DecodeSubmission([]byte(jobBody(t, tc.job, tc.script)), "alice", sizedCatalog(), SubmitPolicy{ShardsPerGPU: 8}, time.Now())
			if err == nil {
				t.Fatal("accepted")
			}
			if err.Status != http.StatusBadRequest || err.Number != tc.number || err.Source != tc.source || !strings.Contains(err.Description, tc.want) {
				t.Errorf("got %d/%d at %s %q, want 400/%d at %s containing %q", err.Status, err.Number, err.Source, err.Description, tc.number, tc.source, tc.want)
			}
			if err.Short != shortText[tc.number] || err.Short == "" {
				t.Errorf("short text %q, want Slurm's %q", err.Short, shortText[tc.number])
			}
		})
	}
}

// TestSubmitBoundsAccept: values at each bound are taken as they are.
func TestSubmitBoundsAccept(t *testing.T) {
	cases := []struct {
		name   string
		job    map[string]any
		script string
		check  func(d *JobDesc) bool
	}{
		{"256-character name", map[string]any{"name": strings.Repeat("n", 256)}, script, func(d *JobDesc) bool { return len(d.Name) == 256 }},
		{"multi-line comment", map[string]any{"comment": "line one\n\tline two"}, script, func(d *JobDesc) bool { return strings.Contains(d.Comment, "\n") }},
		{"all four nodes with all their GPUs", map[string]any{"nodes": "4", "tres_per_node": "gres/gpu:8", "cpus_per_task": 128, "memory_per_node": 1 << 20, "qos": "preemptible"}, script, func(d *JobDesc) bool {
			return d.Nodes == 4 && d.PerNode() == NodeDemand{CPUs: 128, MemoryMiB: 1 << 20, GPUs: 8}
		}},
		{"INFINITE time limit as Slurm's number", map[string]any{"time_limit": int64(1<<32 - 1)}, script, func(d *JobDesc) bool { return d.TimeLimit == sbatch.Unlimited }},
		{"NO_VAL time limit is the default", map[string]any{"time_limit": int64(1<<32 - 2)}, script, func(d *JobDesc) bool { return d.TimeLimit == time.Hour }},
		{"longest finite time limit", map[string]any{"time_limit": sbatch.MaxTimeLimitMinutes}, script, func(d *JobDesc) bool {
			return d.TimeLimit == time.Duration(sbatch.MaxTimeLimitMinutes)*time.Minute
		}},
		{"array up to MaxArraySize-1", map[string]any{"array": "0-1000"}, script, func(d *JobDesc) bool { return d.Array == "0-1000" }},
		{"environment names Kubernetes allows", map[string]any{"environment": map[string]string{"BASH_FUNC_ml%%": "() { :; }", "lower.dot": "1"}}, script, func(d *JobDesc) bool { return len(d.Environment) == 2 }},
		{"script at the limit", map[string]any{}, "#!/bin/sh\n" + strings.Repeat("#", MaxScriptBytes-10), func(d *JobDesc) bool { return len(d.Script) == MaxScriptBytes }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, _, err := DecodeSubmission([]byte(jobBody(t, tc.job, tc.script)), "alice", sizedCatalog(), SubmitPolicy{ShardsPerGPU: 8}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(d) {
				t.Errorf("unexpected %+v", d)
			}
		})
	}
}

// TestMaxArraySizeIsTheSites: the policy's MaxArraySize replaces Slurm's
// default in both directions.
func TestMaxArraySizeIsTheSites(t *testing.T) {
	cases := []struct {
		max   int
		array string
		ok    bool
	}{
		{0, "0-1000", true}, {0, "1001", false}, {10, "0-9", true}, {10, "10", false}, {5000, "0-4999", true}, {5000, "5000", false},
	}
	for _, tc := range cases {
		_, _, err := DecodeSubmission([]byte(jobBody(t, map[string]any{"array": tc.array}, script)), "alice", sizedCatalog(), SubmitPolicy{MaxArraySize: tc.max}, time.Now())
		if (err == nil) != tc.ok {
			t.Errorf("MaxArraySize %d, array %s: got %v, want ok=%v", tc.max, tc.array, err, tc.ok)
		}
		if err != nil && err.Number != ErrInvalidArray {
			t.Errorf("MaxArraySize %d, array %s: error %d, want %d", tc.max, tc.array, err.Number, ErrInvalidArray)
		}
	}
}

// TestSharedGPUNeedsAGPUNode: a GPU share on a partition whose nodes
// have no GPUs can never run.
func TestSharedGPUNeedsAGPUNode(t *testing.T) {
	c := sizedCatalog()
	c.Partitions["h100"].NodeSizes = []NodeSize{{CPUs: 64, MemoryMiB: 1 << 18, Count: 4}}
	_, _, err := DecodeSubmission([]byte(jobBody(t, map[string]any{"tres_per_node": "gres/shard:2"}, script)), "alice", c, SubmitPolicy{ShardsPerGPU: 8}, time.Now())
	if err == nil || err.Number != ErrNodeConfigUnavailable {
		t.Errorf("got %v, want %d", err, ErrNodeConfigUnavailable)
	}
}
