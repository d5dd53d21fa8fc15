package kube

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/launch"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// SubmitEnvAnnotation holds, as a JSON object, the variables sbatch
// exports from the job's submission (slurmapi.JobDesc.SubmitEnv): those
// only the submission knows, such as whether -n was given. The pod
// factory adds them to the job's environment.
const SubmitEnvAnnotation = "sluice.dev/submit-env"

// defaultClusterName is SLURM_CLUSTER_NAME of a job whose submission did
// not record one: the Slurm API's default cluster name.
const defaultClusterName = "sluice"

// submitEnvAnnotation stores d's SubmitEnv on its PodGroup.
func submitEnvAnnotation(d *slurmapi.JobDesc, ann map[string]string) {
	if d.SubmitEnv == nil {
		return
	}
	if b, err := json.Marshal(d.SubmitEnv); err == nil {
		ann[SubmitEnvAnnotation] = string(b)
	}
}

// recordedSubmitEnv is the job's SubmitEnv as its submission recorded
// it; nil if it did not.
func recordedSubmitEnv(pg *v1alpha1.PodGroup) map[string]string {
	v, ok := pg.Annotations[SubmitEnvAnnotation]
	if !ok {
		return nil
	}
	var env map[string]string
	if json.Unmarshal([]byte(v), &env) != nil {
		return nil
	}
	return env
}

// submitEnv is what the job's submission recorded for its environment.
// A PodGroup without the record (made before Sluice kept it, or by hand)
// gets what its spec tells: SLURM_NTASKS where the task count is not the
// default one per node, SLURM_CPUS_PER_TASK above 1, SLURM_MEM_PER_NODE
// for its memory.
func submitEnv(pg *v1alpha1.PodGroup) map[string]string {
	if env := recordedSubmitEnv(pg); env != nil {
		return env
	}
	s := pg.Spec.Slurm
	env := map[string]string{}
	if s.TasksPerNode != nil || (s.Tasks > 0 && s.Tasks != max(s.Nodes, 1)) {
		env["SLURM_NTASKS"] = strconv.Itoa(int(s.Tasks))
		env["SLURM_NPROCS"] = strconv.Itoa(int(s.Tasks))
	}
	if s.TasksPerNode != nil {
		env["SLURM_NTASKS_PER_NODE"] = strconv.Itoa(int(*s.TasksPerNode))
	}
	if s.CPUsPerTask > 1 {
		env["SLURM_CPUS_PER_TASK"] = strconv.Itoa(int(s.CPUsPerTask))
	}
	if m := s.MemoryPerNode; m != nil && m.Value() > 0 {
		env["SLURM_MEM_PER_NODE"] = strconv.FormatInt(m.Value()>>20, 10)
	}
	return env
}

// jobTaskCounts are the tasks of the job on each of its nodes, in node
// order: the job's tasks in blocks, as srun's default step lays them out
// (5 tasks on 2 nodes: 3,2; --ntasks-per-node=4 on 2 nodes: 4,4).
func jobTaskCounts(s *v1alpha1.SlurmJob, nodes int) []int {
	return slurmapi.BlockCounts(max(int(s.Tasks), nodes, 1), nodes)
}

// nodeCPUs is the CPUs each of the job's pods asks for: the job's CPUs
// on every node (all of a Slurm job's pods are alike).
func nodeCPUs(pg *v1alpha1.PodGroup) int {
	if len(pg.Spec.Members) == 0 {
		return 1
	}
	if q, ok := pg.Spec.Members[0].Resources[corev1.ResourceCPU]; ok && q.Value() > 0 {
		return int(q.Value())
	}
	return 1
}

// jobEnv is Slurm's batch environment for the task on node index (the
// batch script's on node 0; sbatch(1), OUTPUT ENVIRONMENT VARIABLES),
// then what of the job's own environment spec.slurm.environment holds in
// plain (plainEnvironment; all of it for a job stored before environments
// were sealed), which may not override the Slurm variables. The rest of it
// reaches the job from its environment Secret (jobenvsecret.go), never the
// pod spec. hosts are the job's node names by node index.
func jobEnv(pg *v1alpha1.PodGroup, b *bridge.Bind, index int, hosts []string, run RunAs) []corev1.EnvVar {
	s := pg.Spec.Slurm
	id := pg.Labels[v1alpha1.JobIDLabel]
	nodes := len(hosts)
	counts := jobTaskCounts(s, nodes)
	first := 0 // the global id of the node's first task
	for _, c := range counts[:index] {
		first += c
	}
	cpus := nodeCPUs(pg)
	ids := NobodyIDs
	if run.IDs != nil {
		ids = *run.IDs
	}
	submitDir := s.WorkingDirectory
	if submitDir == "" {
		submitDir = "/"
	}
	asked := submitEnv(pg)
	cluster := asked["SLURM_CLUSTER_NAME"]
	if cluster == "" {
		cluster = defaultClusterName
	}
	nodeList := sbatch.HostList(hosts)
	slurm := [][2]string{
		{"SLURM_JOB_ID", id}, {"SLURM_JOBID", id},
		{"SLURM_JOB_NAME", s.Name}, {"SLURM_JOB_USER", s.User},
		{"SLURM_JOB_UID", strconv.FormatInt(ids.UID, 10)}, {"SLURM_JOB_GID", strconv.FormatInt(ids.GID, 10)},
		// Who runs the job, as slurmd sets them; never the submitting shell's.
		{"USER", s.User}, {"LOGNAME", s.User},
		{"SLURM_CLUSTER_NAME", cluster},
		{"SLURM_JOB_NODELIST", nodeList}, {"SLURM_NODELIST", nodeList},
		{"SLURM_JOB_NUM_NODES", strconv.Itoa(nodes)}, {"SLURM_NNODES", strconv.Itoa(nodes)},
		{"SLURMD_NODENAME", hosts[index]},
		{"SLURM_TOPOLOGY_ADDR", hosts[index]}, {"SLURM_TOPOLOGY_ADDR_PATTERN", "node"},
		// The batch step is one task: the script, on node 0.
		{"SLURM_NODEID", strconv.Itoa(index)}, {"SLURM_PROCID", strconv.Itoa(first)},
		{"SLURM_LOCALID", "0"}, {"SLURM_GTIDS", strconv.Itoa(first)},
		{"SLURM_TASKS_PER_NODE", slurmapi.RepeatedCounts(counts)},
		{"SLURM_JOB_CPUS_PER_NODE", slurmapi.RepeatedCounts(slices.Repeat([]int{cpus}, nodes))},
		{"SLURM_CPUS_ON_NODE", strconv.Itoa(cpus)},
		{"SLURM_SUBMIT_DIR", submitDir},
		{"SLURM_JOB_PARTITION", pg.Spec.Partition}, {"SLURM_JOB_ACCOUNT", pg.Spec.Queue},
		{"SLURM_JOB_QOS", pg.Spec.QOS},
	}
	if ids.Home != "" {
		// The user's home from the site's identity source. Without one, HOME stays
		// what sbatch exported, as under Slurm (a made-up "/" broke MPICH jobs).
		slurm = append(slurm, [2]string{"HOME", ids.Home})
	}
	if _, ok := s.Environment["SLURM_PRIO_PROCESS"]; !ok {
		// sbatch exports its own nice value; a submission over REST has none.
		slurm = append(slurm, [2]string{"SLURM_PRIO_PROCESS", "0"})
	}
	if !IsAllocation(pg) {
		slurm = append(slurm, [2]string{"ENVIRONMENT", "BATCH"})
	}
	if r := pg.Annotations[v1alpha1.ReservationAnnotation]; r != "" {
		slurm = append(slurm, [2]string{"SLURM_JOB_RESERVATION", r}) // as slurmd sets it for a job in one
	}
	names := make([]string, 0, len(asked))
	for k := range asked {
		if strings.HasPrefix(k, "SLURM_") && k != "SLURM_CLUSTER_NAME" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		slurm = append(slurm, [2]string{k, asked[k]})
	}
	if !run.Start.IsZero() {
		// As Slurm 23.02 on sets them: the run's start, and its end at the time limit.
		slurm = append(slurm, [2]string{"SLURM_JOB_START_TIME", strconv.FormatInt(run.Start.Unix(), 10)})
		if run.TimeLimit > 0 {
			slurm = append(slurm, [2]string{"SLURM_JOB_END_TIME", strconv.FormatInt(run.Start.Add(run.TimeLimit).Unix(), 10)})
		}
	}
	if s.ArrayJobID != nil && s.ArrayTaskID != nil {
		slurm = append(slurm, arrayEnv(s)...)
	}
	if n := pg.Status.Requeues; n > 0 {
		// As Slurm sets it for a requeued or restarted job, so a script can tell a
		// rerun (resume from its checkpoint) from its first run.
		slurm = append(slurm, [2]string{"SLURM_RESTART_COUNT", strconv.Itoa(int(n))})
	}
	slurm = append(slurm, gpuEnv(b)...)
	if shards := pg.Annotations[ShardsAnnotation]; shards != "" && len(b.GPUs) > 0 {
		slurm = append(slurm, [2]string{"SLURM_SHARDS_ON_NODE", shards})
	}
	if m := openMode(asked["SLURM_OPEN_MODE"]); m != "" && !IsAllocation(pg) {
		slurm = append(slurm, [2]string{launch.EnvOpenMode, m})
	}
	if run.InactiveLimit > 0 && IsAllocation(pg) && index == 0 {
		slurm = append(slurm, [2]string{launch.EnvInactiveLimit, strconv.Itoa(int(max(run.InactiveLimit/time.Second, 1)))})
	}
	env := make([]corev1.EnvVar, 0, len(slurm)+len(s.Environment))
	set := map[string]bool{}
	for _, kv := range slurm {
		env = append(env, corev1.EnvVar{Name: kv[0], Value: kv[1]})
		set[kv[0]] = true
	}
	own := make([]string, 0, len(s.Environment))
	for k := range s.Environment {
		if !set[k] && !launcherOwned[k] && !deviceOwned[k] {
			own = append(own, k)
		}
	}
	sort.Strings(own)
	for _, k := range own {
		env = append(env, corev1.EnvVar{Name: k, Value: s.Environment[k]})
	}
	return env
}

// openMode is the launcher's open mode (launch.EnvOpenMode) for sbatch's
// SLURM_OPEN_MODE ("a" or "t"); "" leaves the launcher's default, truncate.
func openMode(v string) string {
	switch {
	case strings.HasPrefix(v, "a"):
		return launch.OpenAppend
	case strings.HasPrefix(v, "t"):
		return launch.OpenTruncate
	}
	return ""
}

// launcherOwned are the variables the pod factory sets for the launcher;
// a job's own environment cannot redirect it.
var launcherOwned = map[string]bool{launch.EnvScript: true, launch.EnvStdout: true, launch.EnvStderr: true, launch.EnvStdin: true,
	launch.EnvWorkDir: true, launch.EnvDir: true, launch.EnvRunDir: true, launch.EnvHosts: true, launch.EnvPeers: true,
	launch.EnvAddr: true, launch.EnvKeyFile: true, launch.EnvTerminationLog: true,
	launch.EnvAllocation: true, launch.EnvKeySHA256: true, launch.EnvTimeLimit: true, launch.EnvJobStart: true,
	launch.EnvSignal: true, launch.EnvOpenMode: true, launch.EnvInactiveLimit: true,
	launch.EnvUserEnvFile: true, launch.EnvUserEnvSHA256: true}

// deviceOwned are the variables that choose and limit a job's GPUs: the
// device plugin or Sluice sets them. From a job's own environment (sbatch
// exports the login shell's) NVIDIA_VISIBLE_DEVICES=all would hand the
// container every GPU of its node, and an MPS limit a share could raise;
// Slurm likewise sets CUDA_VISIBLE_DEVICES itself, whatever was exported.
var deviceOwned = map[string]bool{v1alpha1.VisibleDevicesEnv: true, v1alpha1.GPUPortionEnv: true,
	v1alpha1.MPSThreadPercentageEnv: true, v1alpha1.MPSMemoryLimitEnv: true}

// gpuEnv hands the task its GPUs, which CUDA numbers from 0, as Slurm's
// CUDA_VISIBLE_DEVICES does under cgroup device confinement. Whole GPUs are
// asked of the device plugin (nvidia.com/gpu), which sets
// NVIDIA_VISIBLE_DEVICES to the devices the kubelet chose; a share of a GPU
// names the device of its reservation pod (the scheduler put it in the
// bind), which the NVIDIA runtime then exposes. SLURM_JOB_GPUS and
// GPU_DEVICE_ORDINAL name the same GPUs as the container numbers them:
// which of the node's devices they are is the device plugin's choice,
// which Sluice does not see (docs/architecture.md, whole GPUs).
func gpuEnv(b *bridge.Bind) [][2]string {
	if len(b.GPUs) == 0 {
		return [][2]string{{"CUDA_VISIBLE_DEVICES", ""}, {"NVIDIA_VISIBLE_DEVICES", "void"}}
	}
	devs := make([]string, len(b.GPUs))
	ordinals := make([]string, len(b.GPUs))
	for i, g := range b.GPUs {
		devs[i] = g.UUID
		if devs[i] == "" {
			devs[i] = strconv.Itoa(int(g.Index))
		}
		ordinals[i] = strconv.Itoa(i)
	}
	list := strings.Join(ordinals, ",")
	env := [][2]string{
		{"CUDA_VISIBLE_DEVICES", list}, {"GPU_DEVICE_ORDINAL", list}, {"SLURM_JOB_GPUS", list},
		{"SLURM_GPUS_ON_NODE", strconv.Itoa(len(b.GPUs))},
	}
	if shared := b.GPUMilli > 0 && b.GPUMilli < 1000; !shared { // a whole bind carries the device's memory too
		return env // whole GPUs: the device plugin's
	}
	env = append(env, [2]string{"NVIDIA_VISIBLE_DEVICES", strings.Join(devs, ",")})
	if b.GPUMilli > 0 && b.GPUMilli < 1000 {
		env = append(env, [2]string{"SLUICE_GPU_PORTION", strconv.FormatFloat(float64(b.GPUMilli)/1000, 'f', -1, 64)})
	}
	return env
}

// arrayEnv is an array task's SLURM_ARRAY_* variables; count, min, max
// and step describe the whole array as submitted.
func arrayEnv(s *v1alpha1.SlurmJob) [][2]string {
	env := [][2]string{
		{"SLURM_ARRAY_JOB_ID", strconv.FormatInt(*s.ArrayJobID, 10)},
		{"SLURM_ARRAY_TASK_ID", strconv.Itoa(int(*s.ArrayTaskID))},
	}
	a, err := sbatch.ParseArray(s.Array)
	if err != nil {
		return env // a task made by hand without the array's spec
	}
	idx := a.Indices()
	return append(env,
		[2]string{"SLURM_ARRAY_TASK_COUNT", strconv.Itoa(len(idx))},
		[2]string{"SLURM_ARRAY_TASK_MIN", strconv.Itoa(slices.Min(idx))},
		[2]string{"SLURM_ARRAY_TASK_MAX", strconv.Itoa(slices.Max(idx))},
		[2]string{"SLURM_ARRAY_TASK_STEP", strconv.Itoa(a.Step())})
}
