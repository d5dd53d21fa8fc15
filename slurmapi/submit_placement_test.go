package slurmapi

import (
	"testing"
	"time"
)

// --gpus=N without a node count spreads over as many nodes as it needs, each with the
// same share, as Slurm spreads such a job; with -N, or on nodes large enough, nothing
// changes.
func TestJobGPUsSpreadOverNodes(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	cat := testCatalog()
	p := cat.Partitions["h100"]
	p.NodesKnown, p.NodeCount, p.MaxNodesPerJob = true, 4, 0
	p.NodeSizes = []NodeSize{{CPUs: 64, MemoryMiB: 1 << 20, GPUs: 8, Count: 4}}
	for _, tc := range []struct {
		script            string
		nodes, gpus, task int
	}{
		{"#!/bin/sh\n#SBATCH --gpus=16\n", 2, 8, 2},
		{"#!/bin/sh\n#SBATCH --gpus=12\n", 2, 6, 2},
		{"#!/bin/sh\n#SBATCH --gpus=6\n", 1, 6, 1},
		{"#!/bin/sh\n#SBATCH --gpus=16 -n 4\n", 2, 8, 4},
		{"#!/bin/sh\n#SBATCH --gpus=6 --spread-job\n", 3, 2, 3},
		{"#!/bin/sh\n#SBATCH --gpus=16 --spread-job\n", 4, 4, 4},
		{"#!/bin/sh\n#SBATCH --gpus=1 --spread-job\n", 1, 1, 1},
		{"#!/bin/sh\n#SBATCH --gpus=8 -N 1 --spread-job\n", 1, 8, 1},
		{"#!/bin/sh\n#SBATCH -n 8 --spread-job\n", 4, 0, 8},
	} {
		d, _, err := DecodeSubmission(body(map[string]any{}, tc.script), "alice", cat, SubmitPolicy{}, now)
		if err != nil {
			t.Errorf("%q: %v", tc.script, err)
			continue
		}
		if d.Nodes != tc.nodes || d.PerNode().GPUs != int64(tc.gpus) || d.Tasks != tc.task {
			t.Errorf("%q: %d nodes of %d GPUs, %d tasks; want %d of %d, %d tasks", tc.script, d.Nodes, d.PerNode().GPUs, d.Tasks, tc.nodes, tc.gpus, tc.task)
		}
	}
	if _, _, err := DecodeSubmission(body(map[string]any{}, "#!/bin/sh\n#SBATCH --gpus=16 -N 1\n"), "alice", cat, SubmitPolicy{}, now); err == nil {
		t.Errorf("--gpus=16 -N 1 on 8-GPU nodes accepted")
	}
}
