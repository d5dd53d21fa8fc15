package kube

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/launch"
)

// envCatalog is a site with one GPU partition, enough for the layouts below.
func envCatalog() *slurmapi.Catalog {
	return &slurmapi.Catalog{
		Partitions:       map[string]*slurmapi.Partition{"h100": {Name: "h100", GPUs: 8, DefaultImage: "img"}},
		DefaultPartition: "h100",
		Accounts:         map[string]*slurmapi.Account{"nlp": {Name: "nlp"}},
		QOS:              map[string]*slurmapi.QOS{"normal": {Name: "normal"}},
		UserAccounts:     map[string][]string{"alice": {"nlp"}},
		DefaultAccount:   map[string]string{"alice": "nlp"},
		DefaultQOS:       map[string]string{"nlp": "normal"},
		Reservations:     map[string]*slurmapi.Reservation{"nlp-hack": {Name: "nlp-hack", End: time.Now().Add(time.Hour), Accounts: []string{"nlp"}}},
	}
}

// submitted is the PodGroup of a job submitted as sbatch sends it: the
// script's directives, the submit directory and the login shell's
// environment.
func submitted(t *testing.T, directives string, fields map[string]any) *v1alpha1.PodGroup {
	t.Helper()
	job := map[string]any{"current_working_directory": "/home/alice", "environment": []string{"PATH=/usr/bin:/bin", "HOSTNAME=login1"}}
	maps.Copy(job, fields)
	body, err := json.Marshal(map[string]any{"script": "#!/bin/bash\n" + directives + "srun hostname\n", "job": job})
	if err != nil {
		t.Fatal(err)
	}
	d, _, e := slurmapi.DecodeSubmission(body, "alice", envCatalog(), slurmapi.SubmitPolicy{ShardsPerGPU: 8, ClusterName: "site"}, time.Now())
	if e != nil {
		t.Fatalf("submission refused: %v", e)
	}
	return PodGroupFor(d, 42)
}

// gpuBinds are binds of nodes with gpus whole GPUs each (slots 4 on: the
// container numbers them from 0 whatever the slot).
func gpuBinds(nodes, gpus int) []bridge.Bind {
	binds := make([]bridge.Bind, nodes)
	for i := range binds {
		binds[i] = bridge.Bind{Node: "h100-" + string(rune('0'+i)), Group: memberName}
		if gpus > 0 {
			binds[i].GPUMilli = 1000
		}
		for g := range gpus {
			binds[i].GPUs = append(binds[i].GPUs, bridge.BoundGPU{Index: int32(4 + g)})
		}
	}
	return binds
}

// slurmVars is the part of an environment the golden tables state: every
// SLURM_* and SLURMD_* variable, and those of the GPUs and the launcher's
// open mode.
func slurmVars(env map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		if strings.HasPrefix(k, "SLURM") || k == "ENVIRONMENT" || k == "CUDA_VISIBLE_DEVICES" || k == "GPU_DEVICE_ORDINAL" ||
			k == "NVIDIA_VISIBLE_DEVICES" || k == "SLUICE_OPEN_MODE" {
			out[k] = v
		}
	}
	return out
}

func envMap(pg *v1alpha1.PodGroup, b bridge.Bind, index int, hosts []string, run RunAs) map[string]string {
	out := map[string]string{}
	for _, e := range jobEnv(pg, &b, index, hosts, run) {
		out[e.Name] = e.Value
	}
	return out
}

// diffEnv reports every variable that differs from want, is missing or
// is extra.
func diffEnv(t *testing.T, got, want map[string]string) {
	t.Helper()
	union := maps.Clone(got)
	maps.Copy(union, want)
	names := slices.Sorted(maps.Keys(union))
	for _, k := range names {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !wok:
			t.Errorf("%s=%q is set; Slurm does not set it here", k, g)
		case !gok:
			t.Errorf("%s is missing, want %q", k, w)
		case g != w:
			t.Errorf("%s=%q, want %q", k, g, w)
		}
	}
}

// with is base with some variables changed ("" removes one).
func with(base map[string]string, kv ...string) map[string]string {
	out := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" && kv[i] != "CUDA_VISIBLE_DEVICES" {
			delete(out, kv[i])
			continue
		}
		out[kv[i]] = kv[i+1]
	}
	return out
}

// The batch script's environment, compared whole with what Slurm 22.05
// sets for the same submission (sbatch(1), OUTPUT ENVIRONMENT VARIABLES;
// checked against slurmd 22.05.8 printing `env` in a batch script).
// Sluice's own differences, deliberate: SLURM_JOB_ACCOUNT and
// SLURM_JOB_QOS are always set (Slurm sets them with accounting on);
// a job without GPUs gets CUDA_VISIBLE_DEVICES="" and
// NVIDIA_VISIBLE_DEVICES=void; the tasks of -n 5 -N 2 are laid out 3,2
// on nodes of 3 CPUs each (Slurm fills a node's free CPUs first, e.g.
// 4,1).
func TestJobEnvIsSlurms(t *testing.T) {
	oneNode := map[string]string{
		"ENVIRONMENT": "BATCH", "SLURMD_NODENAME": "h100-0", "SLURM_CLUSTER_NAME": "site",
		"SLURM_JOB_ID": "42", "SLURM_JOBID": "42", "SLURM_JOB_NAME": "a", "SLURM_JOB_USER": "alice",
		"SLURM_JOB_UID": "1001", "SLURM_JOB_GID": "100",
		"SLURM_JOB_NODELIST": "h100-0", "SLURM_NODELIST": "h100-0", "SLURM_JOB_NUM_NODES": "1", "SLURM_NNODES": "1",
		"SLURM_NODEID": "0", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_GTIDS": "0",
		"SLURM_TASKS_PER_NODE": "1", "SLURM_JOB_CPUS_PER_NODE": "1", "SLURM_CPUS_ON_NODE": "1",
		"SLURM_TOPOLOGY_ADDR": "h100-0", "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
		"SLURM_SUBMIT_DIR": "/home/alice", "SLURM_SUBMIT_HOST": "login1", "SLURM_PRIO_PROCESS": "0",
		"SLURM_JOB_PARTITION": "h100", "SLURM_JOB_ACCOUNT": "nlp", "SLURM_JOB_QOS": "normal",
		"CUDA_VISIBLE_DEVICES": "", "NVIDIA_VISIBLE_DEVICES": "void",
	}
	twoNodes := with(oneNode, "SLURM_JOB_NODELIST", "h100-[0-1]", "SLURM_NODELIST", "h100-[0-1]",
		"SLURM_JOB_NUM_NODES", "2", "SLURM_NNODES", "2")
	gpuJob := with(twoNodes, "SLURM_JOB_NAME", "b", "NVIDIA_VISIBLE_DEVICES", "",
		"CUDA_VISIBLE_DEVICES", "0,1", "GPU_DEVICE_ORDINAL", "0,1", "SLURM_JOB_GPUS", "0,1", "SLURM_GPUS_ON_NODE", "2",
		"SLURM_TASKS_PER_NODE", "4(x2)", "SLURM_JOB_CPUS_PER_NODE", "8(x2)", "SLURM_CPUS_ON_NODE", "8",
		"SLURM_NTASKS", "8", "SLURM_NPROCS", "8", "SLURM_NTASKS_PER_NODE", "4", "SLURM_CPUS_PER_TASK", "2",
		"SLURM_MEM_PER_NODE", "65536")
	run := RunAs{IDs: &UserIDs{UID: 1001, GID: 100}}
	tests := []struct {
		name       string
		directives string
		fields     map[string]any
		nodes      int
		gpus       int
		index      int
		want       map[string]string
	}{{
		name: "(a) one node, one task", directives: "#SBATCH -J a\n", nodes: 1, want: oneNode,
	}, {
		name: "in a reservation", directives: "#SBATCH -J a --reservation=nlp-hack\n", nodes: 1,
		want: with(oneNode, "SLURM_JOB_RESERVATION", "nlp-hack"),
	}, {
		name:       "(b) -N2 --ntasks-per-node=4 -c 2 --gres=gpu:2 --mem=64G",
		directives: "#SBATCH -J b -N2 --ntasks-per-node=4 -c 2 --gres=gpu:2 --mem=64G\n", nodes: 2, gpus: 2, want: gpuJob,
	}, {
		name:       "(b) on its second node, where only the launcher runs",
		directives: "#SBATCH -J b -N2 --ntasks-per-node=4 -c 2 --gres=gpu:2 --mem=64G\n", nodes: 2, gpus: 2, index: 1,
		want: with(gpuJob, "SLURMD_NODENAME", "h100-1", "SLURM_TOPOLOGY_ADDR", "h100-1", "SLURM_NODEID", "1",
			"SLURM_PROCID", "4", "SLURM_GTIDS", "4"),
	}, {
		name: "(c) -n 5 -N 2: uneven tasks", directives: "#SBATCH -J c -n 5 -N 2\n", nodes: 2,
		want: with(twoNodes, "SLURM_JOB_NAME", "c", "SLURM_NTASKS", "5", "SLURM_NPROCS", "5",
			"SLURM_TASKS_PER_NODE", "3,2", "SLURM_JOB_CPUS_PER_NODE", "3(x2)", "SLURM_CPUS_ON_NODE", "3"),
	}, {
		name: "-N 2 alone sets no task count", directives: "#SBATCH -J d -N 2\n", nodes: 2,
		want: with(twoNodes, "SLURM_JOB_NAME", "d", "SLURM_TASKS_PER_NODE", "1(x2)", "SLURM_JOB_CPUS_PER_NODE", "1(x2)"),
	}, {
		name:       "--mem-per-cpu and --gpus-per-node are echoed, no SLURM_MEM_PER_NODE",
		directives: "#SBATCH -J e -N 1 -n 2 --mem-per-cpu=1000 --gpus-per-node=2\n", nodes: 1, gpus: 2,
		want: with(oneNode, "SLURM_JOB_NAME", "e", "NVIDIA_VISIBLE_DEVICES", "", "CUDA_VISIBLE_DEVICES", "0,1",
			"GPU_DEVICE_ORDINAL", "0,1", "SLURM_JOB_GPUS", "0,1", "SLURM_GPUS_ON_NODE", "2", "SLURM_GPUS_PER_NODE", "2",
			"SLURM_NTASKS", "2", "SLURM_NPROCS", "2", "SLURM_TASKS_PER_NODE", "2", "SLURM_JOB_CPUS_PER_NODE", "2",
			"SLURM_CPUS_ON_NODE", "2", "SLURM_MEM_PER_CPU", "1000"),
	}, {
		name: "--gpus-per-task", directives: "#SBATCH -J f -n 4 --gpus-per-task=1\n", nodes: 1, gpus: 4,
		want: with(oneNode, "SLURM_JOB_NAME", "f", "NVIDIA_VISIBLE_DEVICES", "", "CUDA_VISIBLE_DEVICES", "0,1,2,3",
			"GPU_DEVICE_ORDINAL", "0,1,2,3", "SLURM_JOB_GPUS", "0,1,2,3", "SLURM_GPUS_ON_NODE", "4", "SLURM_GPUS_PER_TASK", "1",
			"SLURM_NTASKS", "4", "SLURM_NPROCS", "4", "SLURM_TASKS_PER_NODE", "4", "SLURM_JOB_CPUS_PER_NODE", "4", "SLURM_CPUS_ON_NODE", "4"),
	}, {
		name: "--gpus and --mem-per-gpu", directives: "#SBATCH -J g -n 2 --gpus=2 --mem-per-gpu=2000\n", nodes: 1, gpus: 2,
		want: with(oneNode, "SLURM_JOB_NAME", "g", "NVIDIA_VISIBLE_DEVICES", "", "CUDA_VISIBLE_DEVICES", "0,1",
			"GPU_DEVICE_ORDINAL", "0,1", "SLURM_JOB_GPUS", "0,1", "SLURM_GPUS_ON_NODE", "2", "SLURM_GPUS", "2", "SLURM_MEM_PER_GPU", "2000",
			"SLURM_NTASKS", "2", "SLURM_NPROCS", "2", "SLURM_TASKS_PER_NODE", "2", "SLURM_JOB_CPUS_PER_NODE", "2", "SLURM_CPUS_ON_NODE", "2"),
	}, {
		// sbatch exports SLURM_OPEN_MODE=a; the launcher opens -o/-e to append.
		name: "--open-mode=append", directives: "#SBATCH -J a --open-mode=append\n", nodes: 1,
		want: with(oneNode, "SLURM_OPEN_MODE", "a", "SLUICE_OPEN_MODE", "append"),
	}, {
		name: "REST open_mode and tasks, the client's own submit host", directives: "#SBATCH -J a\n", nodes: 1,
		fields: map[string]any{"open_mode": []string{"TRUNCATE"}, "tasks": 1, "environment": []string{"SLURM_SUBMIT_HOST=ws7"}},
		want: with(oneNode, "SLURM_OPEN_MODE", "t", "SLUICE_OPEN_MODE", "truncate", "SLURM_NTASKS", "1", "SLURM_NPROCS", "1",
			"SLURM_SUBMIT_HOST", "ws7"),
	}, {
		// tres_per_node is what both --gres and --gpus-per-node become over REST:
		// as slurmrestd, no SLURM_GPUS_PER_NODE.
		name: "REST tres_per_node", directives: "#SBATCH -J a\n", nodes: 1, gpus: 1,
		fields: map[string]any{"tres_per_node": "gres/gpu:1", "cpus_per_task": 1},
		want: with(oneNode, "NVIDIA_VISIBLE_DEVICES", "", "CUDA_VISIBLE_DEVICES", "0", "GPU_DEVICE_ORDINAL", "0",
			"SLURM_JOB_GPUS", "0", "SLURM_GPUS_ON_NODE", "1", "SLURM_CPUS_PER_TASK", "1"),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := submitted(t, tc.directives, tc.fields)
			hosts := []string{"h100-0", "h100-1"}[:tc.nodes]
			binds := gpuBinds(tc.nodes, tc.gpus)
			diffEnv(t, slurmVars(envMap(pg, binds[tc.index], tc.index, hosts, run)), tc.want)
		})
	}
}

// A job started with a time limit knows its start and end (Slurm 23.02's
// SLURM_JOB_START_TIME and SLURM_JOB_END_TIME); an allocation's shell and
// steps are not a batch script's.
func TestJobEnvTimesAndAllocation(t *testing.T) {
	pg := submitted(t, "#SBATCH -J a\n", nil)
	start := time.Unix(1_800_000_000, 0)
	env := envMap(pg, gpuBinds(1, 0)[0], 0, []string{"h100-0"}, RunAs{Start: start, TimeLimit: time.Hour})
	if env["SLURM_JOB_START_TIME"] != "1800000000" || env["SLURM_JOB_END_TIME"] != "1800003600" {
		t.Errorf("start %q end %q", env["SLURM_JOB_START_TIME"], env["SLURM_JOB_END_TIME"])
	}
	if env["SLURM_JOB_UID"] != "65534" || env["SLURM_JOB_GID"] != "65534" {
		t.Errorf("a user mapped to no ids runs as nobody: uid %q gid %q", env["SLURM_JOB_UID"], env["SLURM_JOB_GID"])
	}
	pg.Spec.Slurm.Script = "" // an allocation
	if env := envMap(pg, gpuBinds(1, 0)[0], 0, []string{"h100-0"}, RunAs{}); env["ENVIRONMENT"] != "" || env["SLURM_JOB_END_TIME"] != "" {
		t.Errorf("allocation: ENVIRONMENT=%q SLURM_JOB_END_TIME=%q", env["ENVIRONMENT"], env["SLURM_JOB_END_TIME"])
	}
	// The site's inactive limit reaches the allocation's batch host, whose
	// launcher releases it once no salloc holds it.
	run := RunAs{InactiveLimit: 90 * time.Second}
	if env := envMap(pg, gpuBinds(1, 0)[0], 0, []string{"h100-0"}, run); env[launch.EnvInactiveLimit] != "90" {
		t.Errorf("allocation's batch host: %s=%q, want 90", launch.EnvInactiveLimit, env[launch.EnvInactiveLimit])
	}
	if env := envMap(pg, gpuBinds(2, 0)[1], 1, []string{"h100-0", "h100-1"}, run); env[launch.EnvInactiveLimit] != "" {
		t.Errorf("allocation's node 1 got %s=%q; only the batch host holds", launch.EnvInactiveLimit, env[launch.EnvInactiveLimit])
	}
}

// A PodGroup without the submission's record (made before Sluice kept
// it, or by hand) gets what its spec tells.
func TestJobEnvWithoutSubmitRecord(t *testing.T) {
	for _, tc := range []struct {
		directives    string
		ntasks, cpus  string
		tasksPerNode  string
		memoryPerNode string
	}{
		{directives: "#SBATCH -N 2\n"},
		{directives: "#SBATCH -N 2 -n 5 -c 3 --mem=1G\n", ntasks: "5", cpus: "3", memoryPerNode: "1024"},
		{directives: "#SBATCH -N 2 --ntasks-per-node=2\n", ntasks: "4", tasksPerNode: "2"},
	} {
		pg := submitted(t, tc.directives, nil)
		delete(pg.Annotations, SubmitEnvAnnotation)
		env := envMap(pg, gpuBinds(2, 0)[0], 0, []string{"h100-0", "h100-1"}, RunAs{})
		got := []string{env["SLURM_NTASKS"], env["SLURM_CPUS_PER_TASK"], env["SLURM_NTASKS_PER_NODE"], env["SLURM_MEM_PER_NODE"], env["SLURM_CLUSTER_NAME"]}
		want := []string{tc.ntasks, tc.cpus, tc.tasksPerNode, tc.memoryPerNode, "sluice"}
		if !slices.Equal(got, want) {
			t.Errorf("%q: NTASKS, CPUS_PER_TASK, NTASKS_PER_NODE, MEM_PER_NODE, CLUSTER_NAME = %q, want %q", tc.directives, got, want)
		}
	}
}

// The job's own environment (sbatch exports the login shell's) cannot
// replace what Slurm sets, nor the launcher's open mode.
func TestJobEnvOwnEnvironmentDoesNotOverride(t *testing.T) {
	pg := submitted(t, "#SBATCH -J a\n", map[string]any{"environment": []string{
		"SLURM_TASKS_PER_NODE=9", "SLURMD_NODENAME=elsewhere", "SLUICE_OPEN_MODE=append", "SLURM_PRIO_PROCESS=5", "LR=0.1"}})
	env := envMap(pg, gpuBinds(1, 0)[0], 0, []string{"h100-0"}, RunAs{})
	if env["SLURM_TASKS_PER_NODE"] != "1" || env["SLURMD_NODENAME"] != "h100-0" || env["SLUICE_OPEN_MODE"] != "" ||
		env["SLURM_PRIO_PROCESS"] != "5" || env["LR"] != "0.1" {
		t.Errorf("env %v", env)
	}
}
