package slurmapi

import (
	"maps"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// What sbatch exports from a submission's options, by the rules of
// sbatch(1) OUTPUT ENVIRONMENT VARIABLES as Slurm 22.05 applies them.
func TestSubmitEnv(t *testing.T) {
	pol := SubmitPolicy{ShardsPerGPU: 8, ClusterName: "site"}
	base := map[string]string{"SLURM_CLUSTER_NAME": "site"}
	tests := []struct {
		name       string
		directives string
		job        map[string]any
		want       map[string]string
	}{
		{"nothing asked", "", nil, base},
		{"-n", "#SBATCH -n 3\n", nil, with(base, "SLURM_NTASKS", "3", "SLURM_NPROCS", "3")},
		{"--ntasks-per-node counts the tasks", "#SBATCH -N 2 --ntasks-per-node=4\n", nil,
			with(base, "SLURM_NTASKS", "8", "SLURM_NPROCS", "8", "SLURM_NTASKS_PER_NODE", "4")},
		{"-N alone", "#SBATCH -N 2\n", nil, base},
		{"-c, also -c 1", "#SBATCH -c 1\n", nil, with(base, "SLURM_CPUS_PER_TASK", "1")},
		{"REST tasks and cpus_per_task", "", map[string]any{"tasks": 2, "cpus_per_task": 4},
			with(base, "SLURM_NTASKS", "2", "SLURM_NPROCS", "2", "SLURM_CPUS_PER_TASK", "4")},
		{"--mem in MB", "#SBATCH --mem=64G\n", nil, with(base, "SLURM_MEM_PER_NODE", "65536")},
		{"--mem-per-cpu alone", "#SBATCH --mem-per-cpu=1000\n", nil, with(base, "SLURM_MEM_PER_CPU", "1000")},
		{"--mem-per-gpu", "#SBATCH --gpus=1 --mem-per-gpu=2G\n", nil, with(base, "SLURM_MEM_PER_GPU", "2048", "SLURM_GPUS", "1")},
		{"--gres sets no GPU count", "#SBATCH --gres=gpu:2\n", nil, base},
		{"--gpus-per-node as given", "#SBATCH --gpus-per-node=h100:2\n", nil, with(base, "SLURM_GPUS_PER_NODE", "h100:2")},
		{"--gpus-per-task", "#SBATCH -n 2 --gpus-per-task=1\n", nil,
			with(base, "SLURM_NTASKS", "2", "SLURM_NPROCS", "2", "SLURM_GPUS_PER_TASK", "1")},
		{"REST tres_per_task replaces the directives", "#SBATCH --gpus-per-node=2\n", map[string]any{"tres_per_task": "gres/gpu:1"},
			with(base, "SLURM_GPUS_PER_TASK", "1")},
		{"--open-mode, by its first letter", "#SBATCH --open-mode=A\n", nil, with(base, "SLURM_OPEN_MODE", "a")},
		{"REST open_mode wins", "#SBATCH --open-mode=append\n", map[string]any{"open_mode": []string{"TRUNCATE"}},
			with(base, "SLURM_OPEN_MODE", "t")},
		{"REST open_mode as a string", "", map[string]any{"open_mode": "append"}, with(base, "SLURM_OPEN_MODE", "a")},
		{"the submit host the client exports", "", map[string]any{"environment": []string{"PATH=/bin", "HOSTNAME=login1"}},
			with(base, "SLURM_SUBMIT_HOST", "login1")},
		{"SLURM_SUBMIT_HOST over HOSTNAME", "", map[string]any{"environment": []string{"HOSTNAME=x", "SLURM_SUBMIT_HOST=login2"}},
			with(base, "SLURM_SUBMIT_HOST", "login2")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _, e := DecodeSubmission(body(jobOf(tc.job), "#!/bin/bash\n"+tc.directives+"true\n"), "alice", testCatalog(), pol, time.Now())
			if e != nil {
				t.Fatal(e)
			}
			if !maps.Equal(d.SubmitEnv, tc.want) {
				t.Errorf("SubmitEnv = %v, want %v", d.SubmitEnv, tc.want)
			}
		})
	}
}

func TestSubmitEnvRefusals(t *testing.T) {
	for _, tc := range []struct {
		name       string
		directives string
		job        map[string]any
		want       string
	}{
		{"--mem=0", "#SBATCH --mem=0\n", nil, "--mem=0"},
		{"REST memory_per_node 0", "", map[string]any{"memory_per_node": map[string]any{"set": true, "number": 0}}, "--mem=0"},
		{"open_mode not a mode", "", map[string]any{"open_mode": []string{"SOMETIMES"}}, "neither APPEND nor TRUNCATE"},
		{"open_mode both", "", map[string]any{"open_mode": []string{"APPEND", "TRUNCATE"}}, "both"},
		{"--open-mode not a mode", "#SBATCH --open-mode=sometimes\n", nil, "neither append nor truncate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, e := DecodeSubmission(body(jobOf(tc.job), "#!/bin/bash\n"+tc.directives+"true\n"), "alice", testCatalog(), SubmitPolicy{ShardsPerGPU: 8}, time.Now())
			if e == nil || e.Status != 400 || !strings.Contains(e.Error(), tc.want) {
				t.Fatalf("error %v, want a 400 saying %q", e, tc.want)
			}
		})
	}
	// --mem with an amount, or a REST memory field not set, is a job's as before.
	if _, _, e := DecodeSubmission(body(map[string]any{"memory_per_node": map[string]any{"set": false, "number": 0}}, "#!/bin/bash\ntrue\n"),
		"alice", testCatalog(), SubmitPolicy{ShardsPerGPU: 8}, time.Now()); e != nil {
		t.Errorf("an unset memory_per_node: %v", e)
	}
}

// A submission that does not say where it came from gets the client's
// address as the server saw it.
func TestStampSubmitHost(t *testing.T) {
	r := httptest.NewRequest("POST", "/slurm/v0.0.44/job/submit", nil)
	r.RemoteAddr = "10.1.2.3:5555"
	d := &JobDesc{SubmitEnv: map[string]string{}}
	StampSubmitHost(d, r)
	if d.SubmitEnv["SLURM_SUBMIT_HOST"] != "10.1.2.3" {
		t.Errorf("SLURM_SUBMIT_HOST = %q", d.SubmitEnv["SLURM_SUBMIT_HOST"])
	}
	d = &JobDesc{SubmitEnv: map[string]string{"SLURM_SUBMIT_HOST": "login1"}}
	StampSubmitHost(d, r)
	if d.SubmitEnv["SLURM_SUBMIT_HOST"] != "login1" {
		t.Errorf("the client's own submit host was replaced: %q", d.SubmitEnv["SLURM_SUBMIT_HOST"])
	}
}

// jobOf is a job description: fields, or none (an empty job).
func jobOf(fields map[string]any) map[string]any {
	if fields == nil {
		return map[string]any{}
	}
	return fields
}

func with(base map[string]string, kv ...string) map[string]string {
	out := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}
