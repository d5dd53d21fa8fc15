package slurmapi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// containerImageEnv is how SPANK passes pyxis's --container-image through
// the environment; Sluice honours it like the directive.
const containerImageEnv = "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image"

// SubmitPolicy is the site's settings that shape a submission.
type SubmitPolicy struct {
	// ShardsPerGPU is how many gres/shard make one GPU (Slurm's shard
	// count per device); gres/shard:N asks for N/ShardsPerGPU of a GPU.
	ShardsPerGPU int
	// MaxArraySize is Slurm's MaxArraySize: array task indices must be
	// below it. 0 means Slurm's default, 1001.
	MaxArraySize int
	// CheckUser, when set, refuses a submission by user whose jobs may not
	// run at this site (kube.UserMap.CheckSubmitter: a user it maps to no
	// uid, or an identity source that could not answer); nil lets every
	// user submit.
	CheckUser func(ctx context.Context, user string) *Error
	// ClusterName is the jobs' SLURM_CLUSTER_NAME; NewServer sets the
	// server's cluster name.
	ClusterName string
}

func (p SubmitPolicy) maxArraySize() int {
	if p.MaxArraySize <= 0 {
		return sbatch.DefaultMaxArraySize
	}
	return min(p.MaxArraySize, sbatch.MaxArraySizeLimit)
}

// buildJobDesc turns a decoded request into a JobDesc: explicit REST
// fields first, then the script's #SBATCH directives for what is unset,
// then defaults. It checks everything that needs no cluster knowledge.
func buildJobDesc(req *submitRequest, user string, now time.Time, pol SubmitPolicy) (*JobDesc, []string, *Error) {
	in := req.Job
	script := req.Script
	if script == "" {
		script = in.Script
	}
	if strings.TrimSpace(script) == "" {
		return nil, nil, BadRequest(ErrScriptMissing, "script", "a batch script is required")
	}
	if !strings.HasPrefix(script, "#!") {
		return nil, nil, BadRequest(ErrScriptMissing, "script", "the script must start with a shebang line (e.g. #!/bin/bash), as sbatch requires")
	}
	opts, warnings, err := sbatch.ParseScript(script)
	if err != nil {
		return nil, nil, BadRequest(ErrRestInvalidJobs, "script", "#SBATCH: %v", err)
	}
	d := &JobDesc{User: user, Script: script}
	pick := func(field *string, rest *string, directive string) {
		switch {
		case rest != nil && *rest != "":
			*field = *rest
		default:
			*field = directive
		}
	}
	pick(&d.Name, in.Name, opts.JobName)
	pick(&d.Partition, in.Partition, opts.Partition)
	pick(&d.Account, in.Account, opts.Account)
	pick(&d.QOS, in.QOS, opts.QOS)
	pick(&d.WorkDir, in.WorkDir, opts.Chdir)
	pick(&d.Stdout, in.Stdout, opts.Output)
	pick(&d.Stderr, in.Stderr, opts.Error)
	pick(&d.Stdin, in.Stdin, opts.Input)
	pick(&d.Dependency, in.Dependency, opts.Dependency)
	pick(&d.Array, in.Array, opts.Array)
	pick(&d.Comment, in.Comment, opts.Comment)
	pick(&d.Reservation, in.Reservation, opts.Reservation)
	pick(&d.ContainerImage, in.ContainerImage, opts.ContainerImage)
	if d.Name == "" {
		d.Name = "sbatch"
	}
	d.Environment = in.Environment
	if opts.Set["export"] && !sbatch.HasExportEnv(d.Environment) {
		// #SBATCH --export applies to the environment sent unless the
		// client applied an --export of its own (sbatch's command line
		// wins over the script's directive).
		d.Environment = sbatch.ExportEnv(opts.Export, d.Environment)
	}
	if len(in.Argv) > 0 { // argv[0] is the script's path, as slurmstepd sets it
		d.Command, d.Argv = in.Argv[0], in.Argv[1:]
		if len(d.Argv) == 0 {
			d.Argv = nil
		}
	}
	if d.ContainerImage == "" {
		d.ContainerImage = envValue(d.Environment, containerImageEnv)
	}
	// Slurm's JobRequeue=1 default: a batch job may be requeued unless
	// --no-requeue (or requeue: false) says otherwise.
	d.Requeue = boolOr(in.Requeue, opts.Requeue || !(opts.Set["requeue"] || opts.Set["no-requeue"]))
	d.Hold = boolOr(in.Hold, opts.Hold)

	if e := setCounts(d, in, opts); e != nil {
		return nil, nil, e
	}
	if e := setMemory(d, in, opts); e != nil {
		return nil, nil, e
	}
	if e := setTimes(d, in, opts, now); e != nil {
		return nil, nil, e
	}
	if e := setGPUs(d, in, opts, pol); e != nil {
		return nil, nil, e
	}
	if e := setPlacement(d, in, opts); e != nil {
		return nil, nil, e
	}
	if e := setSignal(d, in, opts); e != nil {
		return nil, nil, e
	}
	if d.Dependency != "" {
		if _, err := sbatch.ParseDependency(d.Dependency); err != nil {
			return nil, nil, BadRequest(ErrDependency, "job.dependency", "%v", err)
		}
	}
	if e := checkArray(d, pol.maxArraySize()); e != nil {
		return nil, nil, e
	}
	if p, ok := in.Priority.Value(); ok || opts.Set["priority"] {
		if !ok {
			p = opts.Priority
		}
		if p < 0 {
			return nil, nil, BadRequest(ErrRestInvalidJobs, "job.priority", "priority must not be negative")
		}
		d.Priority = p
	}
	if n, ok := in.Nice.Value(); ok || opts.Set["nice"] {
		if !ok {
			n = opts.Nice
		}
		if e := checkNice(n, "job.nice"); e != nil {
			return nil, nil, e
		}
		d.Nice = n
	}
	if e := checkBounds(d); e != nil {
		return nil, nil, e
	}
	if d.MaxNodes > d.Nodes {
		warnings = append(warnings, fmt.Sprintf("job.nodes: the job runs on its minimum of %d nodes; Sluice does not start a job on more nodes than its minimum (maximum %d)", d.Nodes, d.MaxNodes))
	}
	if e := setSubmitEnv(d, in, opts, pol); e != nil {
		return nil, nil, e
	}
	return d, append(req.warnings, warnings...), nil
}

func boolOr(rest *bool, directive bool) bool {
	if rest != nil {
		return *rest
	}
	return directive
}

func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// maxCount bounds every count of a submission (nodes, tasks, CPUs per
// task, GPUs), as the scheduler bounds a task group: products of two
// counts then stay far inside int64, and int32 holds each.
const maxCount = 1 << 20

// count reads a REST NoVal count, falling back to the directive value.
func count(v NoVal, directive int, source string) (int, *Error) {
	n, ok := v.Value()
	if !ok {
		return directive, nil
	}
	if n < 1 || n > maxCount {
		return 0, BadRequest(ErrRestInvalidJobs, source, "%s must be between 1 and %d, got %d", source, maxCount, n)
	}
	return int(n), nil
}

func setCounts(d *JobDesc, in *jobDescIn, opts *sbatch.Options) *Error {
	var e *Error
	d.Nodes, d.MaxNodes = opts.Nodes, opts.MaxNodes
	if in.Nodes != nil && *in.Nodes != "" {
		lo, hi, isRange := strings.Cut(*in.Nodes, "-")
		minN, err1 := strconv.Atoi(lo)
		maxN, err2 := minN, error(nil)
		if isRange {
			maxN, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || minN < 1 || maxN < minN || maxN > maxCount {
			return BadRequest(ErrInvalidNodeCount, "job.nodes", "nodes %q must be N or MIN-MAX with 1 <= MIN <= MAX <= %d", *in.Nodes, maxCount)
		}
		d.Nodes, d.MaxNodes = minN, maxN
	}
	if d.Nodes, e = count(in.MinimumNodes, d.Nodes, "job.minimum_nodes"); e != nil {
		return e
	}
	if d.MaxNodes, e = count(in.MaximumNodes, d.MaxNodes, "job.maximum_nodes"); e != nil {
		return e
	}
	if d.Tasks, e = count(in.Tasks, opts.NTasks, "job.tasks"); e != nil {
		return e
	}
	if d.TasksPerNode, e = count(in.TasksPerNode, opts.NTasksPerNode, "job.tasks_per_node"); e != nil {
		return e
	}
	if d.CPUsPerTask, e = count(in.CPUsPerTask, opts.CPUsPerTask, "job.cpus_per_task"); e != nil {
		return e
	}
	d.NodesGiven = d.Nodes > 0
	if d.Nodes == 0 {
		d.Nodes = 1
	}
	for _, n := range []int{d.Nodes, d.MaxNodes, d.Tasks, d.TasksPerNode, d.CPUsPerTask} {
		if n < 0 || n > maxCount {
			return BadRequest(ErrInvalidNodeCount, "script", "node, task and CPU counts must be between 1 and %d, got %d", maxCount, n)
		}
	}
	if d.MaxNodes != 0 && d.MaxNodes < d.Nodes {
		return BadRequest(ErrInvalidNodeCount, "job.maximum_nodes", "maximum_nodes %d is below minimum_nodes %d", d.MaxNodes, d.Nodes)
	}
	if d.MaxNodes == d.Nodes {
		d.MaxNodes = 0
	}
	if d.CPUsPerTask == 0 {
		d.CPUsPerTask = 1
	}
	switch {
	case d.Tasks == 0 && d.TasksPerNode > 0:
		d.Tasks = d.TasksPerNode * d.Nodes
	case d.Tasks == 0:
		d.Tasks = d.Nodes
	case d.Tasks < d.Nodes:
		return BadRequest(ErrBadTaskCount, "job.tasks", "%d tasks cannot run on %d nodes (at least one task per node)", d.Tasks, d.Nodes)
	}
	return nil
}

func setMemory(d *JobDesc, in *jobDescIn, opts *sbatch.Options) *Error {
	d.MemoryPerNode, d.MemoryPerCPU, d.MemoryPerGPU = opts.Mem, opts.MemPerCPU, opts.MemPerGPU
	restNode, nodeSet := in.MemoryPerNode.Value()
	restCPU, cpuSet := in.MemoryPerCPU.Value()
	if (nodeSet && restNode == 0) || (!nodeSet && !cpuSet && opts.Set["mem"] && opts.Mem == 0) {
		// Slurm gives --mem=0 all of each node's memory. A pod's memory is
		// asked for when it is made, after placement, which counted none:
		// asking then for the node's whole allocatable would be refused by
		// the kubelet wherever another pod holds memory.
		return BadRequest(ErrRestInvalidJobs, "job.memory_per_node", "--mem=0 (all of each node's memory) is not supported: name an amount, e.g. --mem=64G, or give no --mem to run without a memory request")
	}
	if nodeSet || cpuSet {
		// An explicit REST memory field replaces every directive one,
		// as one sbatch memory option replaces the others.
		d.MemoryPerNode, d.MemoryPerCPU, d.MemoryPerGPU = 0, 0, 0
		if nodeSet {
			d.MemoryPerNode = restNode
		}
		if cpuSet {
			d.MemoryPerCPU = restCPU
		}
	}
	if in.MemoryPerTRES != nil && *in.MemoryPerTRES != "" {
		mib, err := perGPUValue(*in.MemoryPerTRES)
		if err != nil {
			return BadRequest(ErrRestInvalidJobs, "job.memory_per_tres", "%v", err)
		}
		d.MemoryPerGPU = mib
	}
	set := 0
	for _, v := range []int64{d.MemoryPerNode, d.MemoryPerCPU, d.MemoryPerGPU} {
		if v < 0 {
			return BadRequest(ErrRestInvalidJobs, "job.memory_per_node", "memory must not be negative")
		}
		if v > 0 {
			set++
		}
	}
	if set > 1 {
		return BadRequest(ErrRestInvalidJobs, "job.memory_per_node", "give only one of memory per node, per CPU or per GPU (--mem, --mem-per-cpu, --mem-per-gpu are mutually exclusive)")
	}
	return nil
}

// perGPUValue reads "gres/gpu:4096" or "gres/gpu=4096" (memory_per_tres).
func perGPUValue(s string) (int64, error) {
	for _, item := range strings.Split(s, ";") {
		name, value, ok := strings.Cut(item, "=")
		if !ok {
			i := strings.LastIndexByte(item, ':')
			if i < 0 {
				return 0, fmt.Errorf("%q is not gres/gpu=VALUE", item)
			}
			name, value = item[:i], item[i+1:]
		}
		if name == "gres/gpu" || name == "gpu" {
			return sbatch.ParseMemory(value)
		}
	}
	return 0, fmt.Errorf("%q names no gres/gpu", s)
}

// Slurm's 32-bit "no value" numbers: a time limit of INFINITE is
// unlimited, one of NO_VAL is not set.
const (
	slurmInfinite = 1<<32 - 1
	slurmNoVal    = 1<<32 - 2
)

// timeLimit reads a time limit in minutes (0: not set). Minutes are
// checked before they are multiplied, so no value wraps around.
func timeLimit(v NoVal, source string) (time.Duration, *Error) {
	minutes, finite := v.Value()
	switch {
	case !finite || minutes == slurmInfinite || minutes == 0: // 0: no limit, as --time=0
		return sbatch.Unlimited, nil
	case minutes == slurmNoVal:
		return 0, nil
	case minutes < 1 || minutes > sbatch.MaxTimeLimitMinutes:
		return 0, BadRequest(ErrInvalidTimeLimit, source, "time_limit is in minutes and must be between 0 (no limit) and %d (or INFINITE), got %d", sbatch.MaxTimeLimitMinutes, minutes)
	}
	return time.Duration(minutes) * time.Minute, nil
}

func setTimes(d *JobDesc, in *jobDescIn, opts *sbatch.Options, now time.Time) *Error {
	d.TimeLimit = opts.Time
	if in.TimeLimit.Set {
		limit, e := timeLimit(in.TimeLimit, "job.time_limit")
		if e != nil {
			return e
		}
		if limit != 0 {
			d.TimeLimit = limit
		}
	}
	if at, ok := in.BeginTime.Value(); ok {
		if at < 0 {
			return BadRequest(ErrInvalidTimeValue, "job.begin_time", "begin_time is a UNIX time and must not be negative")
		}
		d.BeginTime = time.Unix(at, 0)
	} else if opts.Begin != "" {
		t, err := sbatch.ParseBegin(opts.Begin, now)
		if err != nil {
			return BadRequest(ErrInvalidTimeValue, "script", "--begin: %v", err)
		}
		d.BeginTime = t
	}
	if d.BeginTime.After(latestBegin) {
		// Past it, the time has no RFC 3339 form to be stored in: it would be lost,
		// and the job start at once.
		return BadRequest(ErrInvalidTimeValue, "job.begin_time", "begin time %d is after the year 9999", d.BeginTime.Unix())
	}
	return nil
}

// latestBegin is the last begin time a job may ask for.
var latestBegin = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
