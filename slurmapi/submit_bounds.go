package slurmapi

import (
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Bounds on one submission. Each exists so that a job that is given an id
// can also be stored (the PodGroup's schema), started (the pod's and the
// kernel's limits) and scheduled without the server allocating memory in
// proportion to a number a tenant chose. They are checked before a job id
// is taken, so a refused submission consumes nothing.
const (
	// MaxNameChars, MaxCommentChars, MaxPathChars and MaxImageChars are
	// the PodGroup schema's limits on spec.slurm's name, comment, paths
	// (standard_output, standard_error, standard_input,
	// current_working_directory) and image.
	MaxNameChars    = 256
	MaxCommentChars = 1024
	MaxPathChars    = 4096
	MaxImageChars   = 512
	// MaxGPUTypeChars bounds the type of gres/gpu:TYPE:N, kept in an
	// annotation; GPU models are short words ("h100").
	MaxGPUTypeChars = 63
	// MaxUserChars is the schema's limit on spec.slurm.user.
	MaxUserChars = 253
	// MaxDependencyChars and MaxArrayChars are the schema's limits on
	// the dependency and array specs.
	MaxDependencyChars = 1024
	MaxArrayChars      = 256
	// MaxScriptBytes bounds the batch script. It reaches the batch host in
	// one environment variable, and Linux refuses to start a program with
	// any single environment string over 128 KiB (MAX_ARG_STRLEN).
	MaxScriptBytes = 128<<10 - 64
	// MaxEnvironmentBytes bounds the job's environment, NAME=value
	// strings together; each string is also under the 128 KiB a single
	// one may have.
	MaxEnvironmentBytes = 128 << 10
	// MaxStoredBytes bounds the job's text as JSON (escaping included):
	// the PodGroup must stay well under the API server's 1.5 MiB object
	// limit with its metadata and status.
	MaxStoredBytes = 1 << 20
	// maxGPUsPerNode matches the scheduler's bound on GPUs per task.
	maxGPUsPerNode = 1 << 10
	// maxMemoryMiB (1 EiB) keeps memory in bytes within int64.
	maxMemoryMiB = 1 << 40
)

// checkBounds refuses what could not be stored or started, whatever the
// site: text lengths and characters, the environment, the script, and
// counts whose products must stay finite.
func checkBounds(d *JobDesc) *Error {
	for _, f := range []struct {
		source, value string
		limit         int
		lines         bool // may hold newlines and tabs
	}{
		{"job.name", d.Name, MaxNameChars, false},
		{"job.comment", d.Comment, MaxCommentChars, true},
		{"job.standard_output", d.Stdout, MaxPathChars, false},
		{"job.standard_error", d.Stderr, MaxPathChars, false},
		{"job.standard_input", d.Stdin, MaxPathChars, false},
		{"job.current_working_directory", d.WorkDir, MaxPathChars, false},
		{"job.argv", d.Command, MaxPathChars, false},
		{"job.container_image", d.ContainerImage, MaxImageChars, false},
		{"job.tres_per_node", d.GPUs.Type, MaxGPUTypeChars, false},
		{"job.dependency", d.Dependency, MaxDependencyChars, false},
		{"job.array", d.Array, MaxArrayChars, false},
		{"user", d.User, MaxUserChars, false},
	} {
		if e := checkText(f.source, f.value, f.limit, f.lines); e != nil {
			return e
		}
	}
	if d.ContainerImage != "" && strings.TrimSpace(d.ContainerImage) != d.ContainerImage || strings.ContainsAny(d.ContainerImage, " \t") {
		return BadRequest(ErrRestInvalidJobs, "job.container_image", "container image %q must not contain spaces", d.ContainerImage)
	}
	if e := checkScript(d.Script); e != nil {
		return e
	}
	if e := checkEnvironment(d.Environment); e != nil {
		return e
	}
	if e := checkArgv(d.Argv); e != nil {
		return e
	}
	if e := checkCounts(d); e != nil {
		return e
	}
	if n := storedSize(d); n > MaxStoredBytes {
		return BadRequest(ErrRestInvalidJobs, "job", "the job's script, environment and text fields take %d bytes stored, at most %d", n, MaxStoredBytes)
	}
	return nil
}

// checkText refuses a value over limit characters or with control
// characters (a job name is printed by squeue on other users' terminals).
func checkText(source, value string, limit int, lines bool) *Error {
	if n := utf8.RuneCountInString(value); n > limit {
		number := ErrRestInvalidJobs
		if limit == MaxPathChars {
			number = ErrPathnameTooLong
		}
		return BadRequest(number, source, "%s is %d characters, at most %d", source, n, limit)
	}
	for _, r := range value {
		if r == utf8.RuneError || (r < 0x20 && !(lines && (r == '\n' || r == '\t'))) || r == 0x7f {
			return BadRequest(ErrRestInvalidJobs, source, "%s contains a control character or invalid UTF-8 (%q)", source, r)
		}
	}
	return nil
}

func checkScript(script string) *Error {
	if len(script) > MaxScriptBytes {
		return BadRequest(ErrScriptMissing, "script", "the script is %d bytes, at most %d (it reaches the batch host in one environment variable, which Linux caps at 128 KiB)", len(script), MaxScriptBytes)
	}
	if strings.IndexByte(script, 0) >= 0 {
		return BadRequest(ErrScriptMissing, "script", "the script contains a NUL character")
	}
	return nil
}

// checkArgv refuses script arguments no program can receive: with a NUL,
// or together over the size an environment may have (they reach the pod
// in its command, which the kernel bounds like the environment).
func checkArgv(argv []string) *Error {
	total := 0
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return BadRequest(ErrRestInvalidJobs, "job.argv", "argument %d contains a NUL character", i+1)
		}
		total += len(a) + 1
	}
	if total > MaxEnvironmentBytes {
		return BadRequest(ErrRestInvalidJobs, "job.argv", "the script's arguments take %d bytes, at most %d", total, MaxEnvironmentBytes)
	}
	return nil
}

// checkEnvironment refuses names a pod cannot carry (Kubernetes allows
// printable ASCII other than '='; the portable POSIX set is a subset)
// and values no program can receive (NUL), and bounds the size.
func checkEnvironment(env []string) *Error {
	total := 0
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if !validEnvName(name) {
			return BadRequest(ErrRestInvalidJobs, "job.environment", "environment variable name %q is invalid: it must be non-empty printable ASCII without '='", name)
		}
		if strings.IndexByte(value, 0) >= 0 {
			return BadRequest(ErrRestInvalidJobs, "job.environment", "environment variable %s contains a NUL character", name)
		}
		if len(kv) >= 128<<10 {
			return BadRequest(ErrRestInvalidJobs, "job.environment", "environment variable %s is %d bytes; Linux refuses one of 128 KiB or more", name, len(kv))
		}
		total += len(kv)
	}
	if total > MaxEnvironmentBytes {
		return BadRequest(ErrRestInvalidJobs, "job.environment", "the environment is %d bytes, at most %d", total, MaxEnvironmentBytes)
	}
	return nil
}

// validEnvName is Kubernetes' rule for a container's environment names.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c > 0x7e || c == '=' {
			return false
		}
	}
	return true
}

// checkCounts bounds what the counts multiply into: total tasks, and
// each node's CPUs, GPUs and memory.
func checkCounts(d *JobDesc) *Error {
	if d.Tasks > maxCount {
		return BadRequest(ErrBadTaskCount, "job.tasks", "%d tasks, at most %d", d.Tasks, maxCount)
	}
	g := d.GPUs
	for _, n := range []int{g.PerNode, g.PerTask, g.PerJob} {
		if n < 0 || n > maxCount {
			return BadRequest(ErrInvalidGRES, "job.tres_per_node", "a GPU count must be between 0 and %d", maxCount)
		}
	}
	for _, mib := range []int64{d.MemoryPerNode, d.MemoryPerCPU, d.MemoryPerGPU} {
		if mib > maxMemoryMiB {
			return BadRequest(ErrInvalidTaskMemory, "job.memory_per_node", "%d MiB is more memory than any node has", mib)
		}
	}
	n := d.PerNode()
	switch {
	case n.CPUs > maxCount:
		return nodeConfigUnavailable("job.cpus_per_task", "%d CPUs per node is more than any node has", n.CPUs)
	case n.GPUs > maxGPUsPerNode:
		return nodeConfigUnavailable("job.tres_per_node", "%d GPUs per node is more than any node has", n.GPUs)
	case n.MemoryMiB > maxMemoryMiB:
		return nodeConfigUnavailable("job.memory_per_node", "%d MiB per node is more memory than any node has", n.MemoryMiB)
	}
	return nil
}

// checkArray refuses an array with an index at or above the site's
// MaxArraySize, as Slurm does.
func checkArray(d *JobDesc, maxSize int) *Error {
	if d.Array == "" {
		return nil
	}
	a, err := sbatch.ParseArray(d.Array)
	if err != nil {
		return BadRequest(ErrInvalidArray, "job.array", "%v", err)
	}
	if high := a.MaxIndex(); high >= maxSize || a.Count() > maxSize {
		return BadRequest(ErrInvalidArray, "job.array", "array %q: indices must be below MaxArraySize %d (highest is %d, %d tasks)", d.Array, maxSize, high, a.Count())
	}
	return nil
}

// storedSize is the JSON size of the job's free text: what it adds to the
// PodGroup that stores it.
func storedSize(d *JobDesc) int {
	n := jsonLen(d.Script) + jsonLen(d.Name) + jsonLen(d.Comment) + jsonLen(d.Stdout) + jsonLen(d.Stderr) +
		jsonLen(d.Stdin) + jsonLen(d.WorkDir) + jsonLen(d.ContainerImage) + jsonLen(d.Dependency) + jsonLen(d.Array)
	for _, kv := range append(d.Environment, d.Argv...) {
		n += jsonLen(kv) + 4
	}
	return n
}

// jsonLen is the length of s as a JSON string with HTML-safe escaping,
// the most any encoder on the way to etcd may write.
func jsonLen(s string) int {
	n := 2
	for _, r := range s {
		switch {
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
			n += 2
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
			n += 6
		case r == utf8.RuneError:
			n += 6
		default:
			n += utf8.RuneLen(r)
		}
	}
	return n
}

func nodeConfigUnavailable(source, format string, args ...any) *Error {
	return BadRequest(ErrNodeConfigUnavailable, source, format, args...)
}
