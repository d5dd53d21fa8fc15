package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/launch"
)

// inJobShowJob answers `scontrol show job [ID]` inside a Slurm job's pod
// that holds no token (a job's pods carry none): for the job itself, from
// what it was started with, so scripts that read their own NodeList,
// BatchHost, TimeLimit or StdOut work as on a Slurm node. ok is false
// outside a job, with a token, or for another job, which need the server.
func inJobShowJob(w io.Writer, what, name, token string, o showOptions, getenv func(string) string) (ok bool, err error) {
	id := getenv("SLURM_JOB_ID")
	if getenv(launch.EnvRunDir) == "" || id == "" || token != "" || getenv("SLURM_JOB_NODELIST") == "" ||
		what == "" || !strings.HasPrefix("jobs", what) || (name != "" && name != id) {
		return false, nil
	}
	j, err := jobFromEnv(getenv)
	if err != nil {
		return true, err
	}
	if o.json {
		return true, fmt.Errorf("show job --json needs the Sluice server (set SLUICE_URL and SLURM_JWT); inside the job only its own record is at hand")
	}
	jobRecord(j, o.now).write(w, o.oneLine)
	return true, nil
}

// jobFromEnv is the running job as its environment describes it (the
// variables the pod factory sets, slurmapi/kube/jobenv.go).
func jobFromEnv(getenv func(string) string) (client.Job, error) {
	id, err := strconv.ParseUint(getenv("SLURM_JOB_ID"), 10, 32)
	if err != nil {
		return client.Job{}, fmt.Errorf("SLURM_JOB_ID=%q is not a job id", getenv("SLURM_JOB_ID"))
	}
	num := func(name string) client.NoVal {
		if v, err := strconv.ParseInt(getenv(name), 10, 64); err == nil {
			return client.Set(v)
		}
		return client.NoVal{}
	}
	j := client.Job{
		JobID: uint32(id), Name: getenv("SLURM_JOB_NAME"), UserName: getenv("SLURM_JOB_USER"),
		Account: getenv("SLURM_JOB_ACCOUNT"), Partition: getenv("SLURM_JOB_PARTITION"), QOS: getenv("SLURM_JOB_QOS"),
		JobState: []string{"RUNNING"}, Nodes: getenv("SLURM_JOB_NODELIST"), NodeCount: num("SLURM_JOB_NUM_NODES"),
		Tasks: num("SLURM_NTASKS"), CPUsPerTask: num("SLURM_CPUS_PER_TASK"), TasksPerNode: num("SLURM_NTASKS_PER_NODE"),
		MemoryPerNode: num("SLURM_MEM_PER_NODE"), MemoryPerCPU: num("SLURM_MEM_PER_CPU"),
		StartTime: num("SLURM_JOB_START_TIME"), EndTime: num("SLURM_JOB_END_TIME"),
		ArrayJobID: num("SLURM_ARRAY_JOB_ID"), ArrayTaskID: num("SLURM_ARRAY_TASK_ID"),
		WorkDir: getenv("SLURM_SUBMIT_DIR"), StdOut: getenv(launch.EnvStdout), StdErr: getenv(launch.EnvStderr),
		Cluster: getenv("SLURM_CLUSTER_NAME"), BatchFlag: getenv(launch.EnvAllocation) == "",
	}
	if n, err := strconv.ParseInt(getenv("SLURM_RESTART_COUNT"), 10, 64); err == nil {
		j.RestartCount = n
	}
	cpus := 0
	for _, c := range slurmapi.ExpandCounts(getenv("SLURM_JOB_CPUS_PER_NODE")) {
		cpus += c
	}
	if cpus > 0 {
		j.CPUs = client.Set(int64(cpus))
	}
	if start, ok := j.StartTime.Value(); ok {
		if end, ok := j.EndTime.Value(); ok && end > start {
			j.TimeLimit = client.Set((end - start) / 60)
		}
	}
	if j.StdErr == "" {
		j.StdErr = j.StdOut // sbatch's default: both to the output file
	}
	for _, p := range []*string{&j.StdOut, &j.StdErr} {
		if *p != "" && !filepath.IsAbs(*p) && j.WorkDir != "" {
			*p = filepath.Join(j.WorkDir, *p) // the launcher opened it in the job's directory
		}
	}
	return j, nil
}
