package slurmapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// openModeIn is job_desc_msg's open_mode: a list of one flag, ["APPEND"]
// or ["TRUNCATE"] (data_parser v0.0.41 on), or a plain string, as older
// clients send it. It is checked in setSubmitEnv, so a bad value is a 400
// naming the field.
type openModeIn []string

func (m *openModeIn) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*m = []string{s}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("open_mode must be [\"APPEND\"] or [\"TRUNCATE\"]")
	}
	*m = list
	return nil
}

// Open modes of the batch script's output and error files, as JobDesc
// keeps them (and the pod factory passes them to the launcher).
const (
	OpenAppend   = "append"
	OpenTruncate = "truncate"
)

// restOpenMode reads job.open_mode: "" when not given.
func restOpenMode(in openModeIn) (string, *Error) {
	mode := ""
	for _, f := range in {
		var m string
		switch strings.ToUpper(strings.TrimSpace(f)) {
		case "":
			continue
		case "APPEND":
			m = OpenAppend
		case "TRUNCATE":
			m = OpenTruncate
		default:
			return "", BadRequest(ErrRestInvalidJobs, "job.open_mode", "open_mode %q is neither APPEND nor TRUNCATE", f)
		}
		if mode != "" && mode != m {
			return "", BadRequest(ErrRestInvalidJobs, "job.open_mode", "open_mode asks for both APPEND and TRUNCATE")
		}
		mode = m
	}
	return mode, nil
}

// setSubmitEnv records on d the variables sbatch puts into a job's
// environment from its options (sbatch(1) OUTPUT ENVIRONMENT VARIABLES),
// which only the submission knows: whether -n or -c was given, which
// memory option, how GPUs were asked for, the open mode, the cluster and
// the submit host. The pod factory adds those of the allocation (node
// list, CPUs and tasks per node, GPUs) when the job starts. d's counts,
// memory and GPUs are final when it is called.
func setSubmitEnv(d *JobDesc, in *jobDescIn, opts *sbatch.Options, pol SubmitPolicy) *Error {
	env := map[string]string{}
	_, restTasks := in.Tasks.Value()
	_, restCPUs := in.CPUsPerTask.Value()
	// sbatch exports SLURM_NTASKS for -n, and for --ntasks-per-node, from
	// which it counts the tasks (Slurm 22.05: -N2 --ntasks-per-node=4 sets
	// SLURM_NTASKS=8; -N2 alone sets none).
	if restTasks || opts.Set["ntasks"] || d.TasksPerNode > 0 {
		env["SLURM_NTASKS"] = strconv.Itoa(d.Tasks)
		env["SLURM_NPROCS"] = strconv.Itoa(d.Tasks)
	}
	if d.TasksPerNode > 0 {
		env["SLURM_NTASKS_PER_NODE"] = strconv.Itoa(d.TasksPerNode)
	}
	if restCPUs || opts.Set["cpus-per-task"] {
		env["SLURM_CPUS_PER_TASK"] = strconv.Itoa(d.CPUsPerTask)
	}
	// One memory option is set at most (setMemory); MB, as Slurm prints it.
	for _, m := range []struct {
		name string
		mib  int64
	}{{"SLURM_MEM_PER_NODE", d.MemoryPerNode}, {"SLURM_MEM_PER_CPU", d.MemoryPerCPU}, {"SLURM_MEM_PER_GPU", d.MemoryPerGPU}} {
		if m.mib > 0 {
			env[m.name] = strconv.FormatInt(m.mib, 10)
		}
	}
	gpuEnvFromOptions(env, d, in, opts)
	mode, e := restOpenMode(in.OpenMode)
	if e != nil {
		return e
	}
	if mode == "" {
		mode = opts.OpenMode
	}
	if mode != "" {
		env["SLURM_OPEN_MODE"] = mode[:1] // sbatch exports "a" or "t"
	}
	if pol.ClusterName != "" {
		env["SLURM_CLUSTER_NAME"] = pol.ClusterName
	}
	// sbatch exports the host it runs on; a client that sent its
	// environment says it there (HOSTNAME where a login shell exports it).
	if h := envValue(d.Environment, "SLURM_SUBMIT_HOST"); h != "" {
		env["SLURM_SUBMIT_HOST"] = h
	} else if h := envValue(d.Environment, "HOSTNAME"); h != "" {
		env["SLURM_SUBMIT_HOST"] = h
	}
	d.SubmitEnv = env
	return nil
}

// gpuEnvFromOptions sets SLURM_GPUS_PER_NODE, SLURM_GPUS_PER_TASK and
// SLURM_GPUS where sbatch would: for --gpus-per-node, --gpus-per-task and
// --gpus (-G) as given, not for --gres. REST tres_per_task and tres_per_job
// are what --gpus-per-task and --gpus become; tres_per_node is also what
// --gres becomes, so it sets nothing.
func gpuEnvFromOptions(env map[string]string, d *JobDesc, in *jobDescIn, opts *sbatch.Options) {
	rest := false
	for _, f := range []*string{in.TRESPerNode, in.TRESPerTask, in.TRESPerJob} {
		rest = rest || (f != nil && *f != "")
	}
	if !rest {
		for _, o := range []struct{ name, value string }{
			{"SLURM_GPUS_PER_NODE", opts.GPUsPerNode}, {"SLURM_GPUS_PER_TASK", opts.GPUsPerTask}, {"SLURM_GPUS", opts.GPUs},
		} {
			if o.value != "" {
				env[o.name] = o.value
			}
		}
		return
	}
	count := func(n int) string {
		if d.GPUs.Type != "" {
			return d.GPUs.Type + ":" + strconv.Itoa(n)
		}
		return strconv.Itoa(n)
	}
	if in.TRESPerTask != nil && *in.TRESPerTask != "" && d.GPUs.PerTask > 0 {
		env["SLURM_GPUS_PER_TASK"] = count(d.GPUs.PerTask)
	}
	if in.TRESPerJob != nil && *in.TRESPerJob != "" && d.GPUs.PerJob > 0 {
		env["SLURM_GPUS"] = count(d.GPUs.PerJob)
	}
}

// StampSubmitHost gives a job whose submission did not say where it was
// submitted from (SLURM_SUBMIT_HOST) the client's address as the server
// saw it.
func StampSubmitHost(d *JobDesc, r *http.Request) {
	if d == nil || r == nil || d.SubmitEnv["SLURM_SUBMIT_HOST"] != "" {
		return
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if host == "" {
		return
	}
	if d.SubmitEnv == nil {
		d.SubmitEnv = map[string]string{}
	}
	d.SubmitEnv["SLURM_SUBMIT_HOST"] = host
}
