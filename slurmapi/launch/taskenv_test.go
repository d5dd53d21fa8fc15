package launch

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The batch environment of the job's pods (slurmapi/kube's jobEnv, whose
// golden test states it against Slurm 22.05) for two layouts, on node 0
// and node 1: what srun exports from the batch script (node 0's) and what
// each node's own pod carries.
var (
	batchJobB = map[string]string{ // -N2 --ntasks-per-node=4 -c 2 --gres=gpu:2 --mem=64G
		"ENVIRONMENT": "BATCH", "SLURMD_NODENAME": "h100-0", "SLURM_CLUSTER_NAME": "site",
		"SLURM_JOB_ID": "42", "SLURM_JOBID": "42", "SLURM_JOB_NAME": "b", "SLURM_JOB_USER": "alice",
		"SLURM_JOB_UID": "1001", "SLURM_JOB_GID": "100",
		"SLURM_JOB_NODELIST": "h100-[0-1]", "SLURM_NODELIST": "h100-[0-1]", "SLURM_JOB_NUM_NODES": "2", "SLURM_NNODES": "2",
		"SLURM_NODEID": "0", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_GTIDS": "0",
		"SLURM_TASKS_PER_NODE": "4(x2)", "SLURM_JOB_CPUS_PER_NODE": "8(x2)", "SLURM_CPUS_ON_NODE": "8",
		"SLURM_TOPOLOGY_ADDR": "h100-0", "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
		"SLURM_SUBMIT_DIR": "/home/alice", "SLURM_SUBMIT_HOST": "login1", "SLURM_PRIO_PROCESS": "0",
		"SLURM_JOB_PARTITION": "h100", "SLURM_JOB_ACCOUNT": "nlp", "SLURM_JOB_QOS": "normal",
		"CUDA_VISIBLE_DEVICES": "0,1", "GPU_DEVICE_ORDINAL": "0,1", "SLURM_JOB_GPUS": "0,1", "SLURM_GPUS_ON_NODE": "2",
		"SLURM_NTASKS": "8", "SLURM_NPROCS": "8", "SLURM_NTASKS_PER_NODE": "4", "SLURM_CPUS_PER_TASK": "2",
		"SLURM_MEM_PER_NODE": "65536",
	}
	batchJobC = map[string]string{ // -n 5 -N 2
		"ENVIRONMENT": "BATCH", "SLURMD_NODENAME": "h100-0", "SLURM_CLUSTER_NAME": "site",
		"SLURM_JOB_ID": "42", "SLURM_JOBID": "42", "SLURM_JOB_NAME": "c", "SLURM_JOB_USER": "alice",
		"SLURM_JOB_UID": "1001", "SLURM_JOB_GID": "100",
		"SLURM_JOB_NODELIST": "h100-[0-1]", "SLURM_NODELIST": "h100-[0-1]", "SLURM_JOB_NUM_NODES": "2", "SLURM_NNODES": "2",
		"SLURM_NODEID": "0", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_GTIDS": "0",
		"SLURM_TASKS_PER_NODE": "3,2", "SLURM_JOB_CPUS_PER_NODE": "3(x2)", "SLURM_CPUS_ON_NODE": "3",
		"SLURM_TOPOLOGY_ADDR": "h100-0", "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
		"SLURM_SUBMIT_DIR": "/home/alice", "SLURM_SUBMIT_HOST": "login1", "SLURM_PRIO_PROCESS": "0",
		"SLURM_JOB_PARTITION": "h100", "SLURM_JOB_ACCOUNT": "nlp", "SLURM_JOB_QOS": "normal",
		"CUDA_VISIBLE_DEVICES": "", "NVIDIA_VISIBLE_DEVICES": "void",
		"SLURM_NTASKS": "5", "SLURM_NPROCS": "5",
	}
)

// onNode is a batch environment as node i's pod has it.
func onNode(batch map[string]string, i int, firstTask int) map[string]string {
	env := maps.Clone(batch)
	host := "h100-" + strconv.Itoa(i)
	env["SLURMD_NODENAME"], env["SLURM_TOPOLOGY_ADDR"], env["SLURM_NODEID"] = host, host, strconv.Itoa(i)
	env["SLURM_PROCID"], env["SLURM_GTIDS"] = strconv.Itoa(firstTask), strconv.Itoa(firstTask)
	return env
}

// blockSpecs are a step's node specs as srun makes them for counts tasks
// per node over the job's first nodes.
func blockSpecs(counts []int, env []string) []StepSpec {
	hosts := []string{"h100-0", "h100-1"}[:len(counts)]
	total := 0
	for _, c := range counts {
		total += c
	}
	specs := make([]StepSpec, len(counts))
	proc := 0
	for i, c := range counts {
		specs[i] = StepSpec{JobID: "42", Step: 0, Argv: []string{"env"}, Cwd: "/home/alice", Env: env, Nodes: hosts,
			NodeIndex: i, NTasks: total, TasksPerNode: counts}
		for l := range c {
			specs[i].Tasks = append(specs[i].Tasks, TaskSlot{ProcID: proc, LocalID: l})
			proc++
		}
	}
	return specs
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// stepVars is the part of a task's environment the tables state.
func stepVars(env []string) map[string]string {
	out := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SLURM") || k == "ENVIRONMENT" || k == "CUDA_VISIBLE_DEVICES" || k == "GPU_DEVICE_ORDINAL" || k == "NVIDIA_VISIBLE_DEVICES" {
			out[k] = v
		}
	}
	return out
}

// A step task's environment, compared whole with what srun 22.05 gives
// the same task (srun(1), OUTPUT ENVIRONMENT VARIABLES; checked against
// slurmd 22.05.8 printing `env` in each task). Left out, as Sluice's srun
// has no use for them: SLURM_SRUN_COMM_HOST/PORT, SLURM_STEP_LAUNCHER_PORT,
// SLURM_LAUNCH_NODE_IPADDR, SLURM_UMASK. (c)'s nodes have 3 CPUs each
// (Sluice's allocation; Slurm's may differ, e.g. 4,1).
func TestTaskEnvIsSrunsInSlurm(t *testing.T) {
	stepB := with(batchJobB, "SLURM_STEP_ID", "0", "SLURM_STEPID", "0", "SLURM_DISTRIBUTION", "block",
		"SLURM_STEP_NODELIST", "h100-[0-1]", "SLURM_STEP_NUM_NODES", "2", "SLURM_STEP_NUM_TASKS", "8",
		"SLURM_STEP_TASKS_PER_NODE", "4(x2)", "SLURM_STEP_GPUS", "0,1")
	stepC := with(batchJobC, "SLURM_STEP_ID", "0", "SLURM_STEPID", "0", "SLURM_DISTRIBUTION", "block",
		"SLURM_STEP_NODELIST", "h100-[0-1]", "SLURM_STEP_NUM_NODES", "2", "SLURM_STEP_NUM_TASKS", "3",
		"SLURM_STEP_TASKS_PER_NODE", "2,1", "SLURM_TASKS_PER_NODE", "2,1", "SLURM_NTASKS", "3", "SLURM_NPROCS", "3")
	tests := []struct {
		name        string
		batch       map[string]string
		firstOfNode []int // each node's first job task, as its pod's env has it
		counts      []int
		node, task  int
		gpusPerTask int
		want        map[string]string
	}{{
		name: "srun in (b), task 5 on node 1", batch: batchJobB, firstOfNode: []int{0, 4}, counts: []int{4, 4}, node: 1, task: 1,
		want: with(stepB, "SLURMD_NODENAME", "h100-1", "SLURM_TOPOLOGY_ADDR", "h100-1", "SLURM_NODEID", "1",
			"SLURM_PROCID", "5", "SLURM_LOCALID", "1", "SLURM_GTIDS", "4,5,6,7"),
	}, {
		name: "srun in (b), task 0", batch: batchJobB, firstOfNode: []int{0, 4}, counts: []int{4, 4}, node: 0, task: 0,
		want: with(stepB, "SLURM_GTIDS", "0,1,2,3"),
	}, {
		name: "srun -n 3 in (c), task 2 on node 1", batch: batchJobC, firstOfNode: []int{0, 3}, counts: []int{2, 1}, node: 1, task: 0,
		want: with(stepC, "SLURMD_NODENAME", "h100-1", "SLURM_TOPOLOGY_ADDR", "h100-1", "SLURM_NODEID", "1",
			"SLURM_PROCID", "2", "SLURM_GTIDS", "2"),
	}, {
		name: "srun -n 3 in (c), task 1 on node 0", batch: batchJobC, firstOfNode: []int{0, 3}, counts: []int{2, 1}, node: 0, task: 1,
		want: with(stepC, "SLURM_PROCID", "1", "SLURM_LOCALID", "1", "SLURM_GTIDS", "0,1"),
	}, {
		// One task on one node: Slurm's default distribution is then cyclic.
		name: "srun -N1 -n1 in (b)", batch: batchJobB, firstOfNode: []int{0, 4}, counts: []int{1}, node: 0, task: 0,
		want: with(stepB, "SLURM_DISTRIBUTION", "cyclic", "SLURM_STEP_NODELIST", "h100-0", "SLURM_STEP_NUM_NODES", "1",
			"SLURM_NNODES", "1", "SLURM_STEP_NUM_TASKS", "1", "SLURM_NTASKS", "1", "SLURM_NPROCS", "1",
			"SLURM_STEP_TASKS_PER_NODE", "1", "SLURM_TASKS_PER_NODE", "1", "SLURM_GTIDS", "0"),
	}, {
		// --gpus-per-task: each task sees its own GPUs, which are its step's.
		name: "srun --gpus-per-task=1 -n 2 -N1 in (b), task 1", batch: batchJobB, firstOfNode: []int{0, 4}, counts: []int{2}, node: 0, task: 1,
		gpusPerTask: 1,
		want: with(stepB, "SLURM_STEP_NODELIST", "h100-0", "SLURM_STEP_NUM_NODES", "1", "SLURM_NNODES", "1",
			"SLURM_STEP_NUM_TASKS", "2", "SLURM_NTASKS", "2", "SLURM_NPROCS", "2", "SLURM_STEP_TASKS_PER_NODE", "2",
			"SLURM_TASKS_PER_NODE", "2", "SLURM_GTIDS", "0,1", "SLURM_PROCID", "1", "SLURM_LOCALID", "1",
			"CUDA_VISIBLE_DEVICES", "1", "GPU_DEVICE_ORDINAL", "1", "SLURM_STEP_GPUS", "1", "SLURM_GPUS_PER_TASK", "1"),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// srun runs in the batch script on node 0 and exports its environment.
			specs := blockSpecs(tc.counts, envList(tc.batch))
			spec := specs[tc.node]
			spec.GPUsPerTask = tc.gpusPerTask
			pod := onNode(tc.batch, tc.node, tc.firstOfNode[tc.node])
			job := &Job{ID: "42", Node: tc.node, Hosts: []string{"h100-0", "h100-1"}, Dir: "/sluice"}
			env, err := taskEnv(job, spec, spec.Tasks[tc.task], func(k string) string { return pod[k] })
			if err != nil {
				t.Fatal(err)
			}
			diffVars(t, stepVars(env), tc.want)
		})
	}
}

// A step without the layout from srun lays its tasks out in blocks; a
// node without GPUs gives its tasks none of srun's node's.
func TestTaskEnvDefaultsAndNodeOwnGPUs(t *testing.T) {
	spec := StepSpec{Step: 3, Argv: []string{"true"}, Nodes: []string{"a", "b"}, NTasks: 5, NodeIndex: 1,
		Tasks: []TaskSlot{{ProcID: 3}, {ProcID: 4, LocalID: 1}},
		Env:   []string{"SLURM_JOB_GPUS=0,1", "GPU_DEVICE_ORDINAL=0,1", "SLURM_STEP_GPUS=0,1", "CUDA_VISIBLE_DEVICES=0,1"}}
	job := &Job{ID: "1", Node: 1, Hosts: []string{"a", "b"}}
	env, err := taskEnv(job, spec, spec.Tasks[1], func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	got := stepVars(env)
	if got["SLURM_TASKS_PER_NODE"] != "3,2" || got["SLURM_DISTRIBUTION"] != "block" || got["SLURM_GTIDS"] != "3,4" {
		t.Errorf("layout: %v", got)
	}
	for _, k := range []string{"SLURM_JOB_GPUS", "GPU_DEVICE_ORDINAL", "SLURM_STEP_GPUS"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s=%q on a node without GPUs", k, v)
		}
	}
	if got["CUDA_VISIBLE_DEVICES"] != "" {
		t.Errorf("CUDA_VISIBLE_DEVICES=%q on a node without GPUs", got["CUDA_VISIBLE_DEVICES"])
	}
	spec.Distribution = "cyclic"
	if env, _ := taskEnv(job, spec, spec.Tasks[0], func(string) string { return "" }); stepVars(env)["SLURM_DISTRIBUTION"] != "cyclic" {
		t.Errorf("srun -m cyclic: %v", stepVars(env)["SLURM_DISTRIBUTION"])
	}
}

func with(base map[string]string, kv ...string) map[string]string {
	out := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func diffVars(t *testing.T, got, want map[string]string) {
	t.Helper()
	union := maps.Clone(got)
	maps.Copy(union, want)
	for _, k := range slices.Sorted(maps.Keys(union)) {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !wok:
			t.Errorf("%s=%q is set; srun does not set it here", k, g)
		case !gok:
			t.Errorf("%s is missing, want %q", k, w)
		case g != w:
			t.Errorf("%s=%q, want %q", k, g, w)
		}
	}
}
