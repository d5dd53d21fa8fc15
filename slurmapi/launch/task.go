package launch

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// StepSpec is what srun sends each node of a step: the command and the
// tasks that node runs.
type StepSpec struct {
	JobID       string     `json:"job_id"`
	Step        int        `json:"step"`
	Argv        []string   `json:"argv"`
	Cwd         string     `json:"cwd"`
	Env         []string   `json:"env"` // what --export passes, before the node's own variables
	Nodes       []string   `json:"nodes"`
	NodeIndex   int        `json:"node_index"` // this node's index within the step
	NTasks      int        `json:"ntasks"`
	Tasks       []TaskSlot `json:"tasks"`
	GPUsPerTask int        `json:"gpus_per_task,omitempty"`
	CPUsPerTask int        `json:"cpus_per_task,omitempty"`
	// Output and Error are per-task file patterns (%t, %n or %N in
	// them) the node writes itself; empty streams back to srun.
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
	// Stdin: this node runs task 0, whose input srun streams to its
	// launcher (pathStdin); otherwise the tasks read /dev/null.
	Stdin bool `json:"stdin,omitempty"`
	// MPI: the node serves PMI to its tasks (srun --mpi=pmi2: pmi.go).
	MPI *StepMPI `json:"mpi,omitempty"`
	// TasksPerNode are the step's task counts on each of its nodes, in
	// step node order (SLURM_STEP_TASKS_PER_NODE); empty: NTasks in
	// blocks over Nodes, as srun lays a step out by default.
	TasksPerNode []int `json:"tasks_per_node,omitempty"`
	// Distribution is srun -m as the tasks were laid out ("block",
	// "cyclic", ...); empty: Slurm's default, cyclic when no node runs
	// more than one task, else block.
	Distribution string `json:"distribution,omitempty"`
}

// TaskSlot is one task of a node.
type TaskSlot struct {
	ProcID  int `json:"procid"`
	LocalID int `json:"localid"`
}

// event is one frame of a node's answer: output of a task, its exit, or
// a failure to start.
type event struct {
	Task   int       `json:"task"`
	Stream int       `json:"stream,omitempty"` // 1 stdout, 2 stderr
	Data   []byte    `json:"data,omitempty"`
	Exit   *taskExit `json:"exit,omitempty"`
	Err    string    `json:"error,omitempty"`
	PMI    *pmiMsg   `json:"pmi,omitempty"` // a fence or an abort (pmi.go)
}

type taskExit struct {
	Code   int `json:"code"`
	Signal int `json:"signal,omitempty"`
}

// rc is the exit status srun reports for a task: its exit code, or 128
// plus the signal that ended it.
func (e taskExit) rc() int {
	if e.Signal != 0 {
		return 128 + e.Signal
	}
	return e.Code
}

// nodeLocal are the variables a task takes from its own node's pod, not
// from the environment srun exported: the GPUs and identity of the node.
// The launcher's own paths are the pod's too (every pod has the same
// ones; a test that runs pods as local processes has one set per node).
var nodeLocal = []string{"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "SLURM_GPUS_ON_NODE",
	"SLUICE_GPU_PORTION", "HOSTNAME", EnvDir, EnvRunDir, EnvKeyFile, EnvTerminationLog,
	"SLURM_CPUS_ON_NODE", "SLURM_JOB_GPUS", "GPU_DEVICE_ORDINAL", "SLURM_SHARDS_ON_NODE"}

// nodeOnly are the node's own variables a task does not have at all when
// its node has none (rather than those of the node srun runs on).
var nodeOnly = map[string]bool{"SLURM_JOB_GPUS": true, "GPU_DEVICE_ORDINAL": true, "SLURM_SHARDS_ON_NODE": true}

// nodeStep is a step's tasks on this node.
type nodeStep struct {
	mu    sync.Mutex
	procs []*exec.Cmd
	ended map[*exec.Cmd]bool // reaped: Wait writes ProcessState unguarded, so signal reads this
	wg    sync.WaitGroup
}

// startNodeStep starts this node's tasks of spec; emit gets their output
// and exits (from several goroutines; it must be safe for that).
// getenv is the node's own environment; stdin, if not nil, is task 0's
// input (srun's).
func startNodeStep(job *Job, spec StepSpec, getenv func(string) string, emit func(event), stdin io.Reader) (*nodeStep, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("no command to run")
	}
	s := &nodeStep{ended: map[*exec.Cmd]bool{}}
	pmi, err := startStepPMI(job, spec, emit)
	if err != nil {
		return nil, err
	}
	for _, t := range spec.Tasks {
		env, err := taskEnv(job, spec, t, getenv)
		if err != nil {
			s.signal(syscall.SIGKILL)
			go func() { s.wait(); pmi.stop() }()
			return nil, err
		}
		stdout, stderr, closeFiles, err := taskOutput(job, spec, t, emit)
		if err != nil {
			s.signal(syscall.SIGKILL)
			go func() { s.wait(); pmi.stop() }()
			return nil, err
		}
		cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
		cmd.Path = lookPath(spec.Argv[0], envValue(env, "PATH"), spec.Cwd)
		cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, spec.Cwd, stdout, stderr
		if t.ProcID == 0 && stdin != nil {
			cmd.Stdin = stdin
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// A task's background children may hold its output open; the
		// task's end does not wait for them longer than this.
		cmd.WaitDelay = 5 * time.Second
		if err := pmi.start(cmd, t); err != nil {
			closeFiles()
			// As slurmstepd: the task "ran" and failed with status 2.
			emit(event{Task: t.ProcID, Stream: 2, Data: fmt.Appendf(nil, "slurmstepd: error: execve(): %s: %v\n", spec.Argv[0], unwrapExec(err))})
			emit(event{Task: t.ProcID, Exit: &taskExit{Code: 2}})
			continue
		}
		s.mu.Lock()
		s.procs = append(s.procs, cmd)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = cmd.Wait() // the exit status is read from ProcessState
			s.mu.Lock()
			s.ended[cmd] = true
			s.mu.Unlock()
			closeFiles()
			emit(event{Task: t.ProcID, Exit: exitOf(cmd)})
		}()
	}
	go func() { s.wait(); pmi.stop() }()
	return s, nil
}

func unwrapExec(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func exitOf(cmd *exec.Cmd) *taskExit {
	if cmd.ProcessState == nil {
		return &taskExit{Code: 1}
	}
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		if st.Signaled() {
			return &taskExit{Signal: int(st.Signal())}
		}
		return &taskExit{Code: st.ExitStatus()}
	}
	return &taskExit{Code: cmd.ProcessState.ExitCode()}
}

// signal sends sig to every task's process group.
func (s *nodeStep) signal(sig syscall.Signal) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.procs {
		if c.Process != nil && !s.ended[c] {
			_ = syscall.Kill(-c.Process.Pid, sig)
		}
	}
}

// wait returns once every task has exited and its exit was emitted.
func (s *nodeStep) wait() { s.wg.Wait() }

// taskEnv is a task's environment: what srun exported (the batch
// script's, with the job's variables), the node's own variables, then the
// step's, as srun(1) OUTPUT ENVIRONMENT VARIABLES and Slurm 22.05 set
// them: the step's task and node counts, task ids and node list replace
// the job's in SLURM_NTASKS, SLURM_NNODES, SLURM_TASKS_PER_NODE (the job's
// stay in SLURM_JOB_*, SLURM_NODELIST), and the GPUs the task sees are
// its SLURM_STEP_GPUS.
func taskEnv(job *Job, spec StepSpec, t TaskSlot, getenv func(string) string) ([]string, error) {
	vars := map[string]string{}
	for _, kv := range spec.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	for _, k := range nodeLocal {
		if v := getenv(k); v != "" || k == "CUDA_VISIBLE_DEVICES" {
			vars[k] = v
		} else if nodeOnly[k] {
			delete(vars, k)
		}
	}
	step := strconv.Itoa(spec.Step)
	host := job.Hosts[job.Node]
	perNode := stepTaskCounts(spec)
	gtids := []string{strconv.Itoa(t.ProcID)} // a step of one task (an attach) lists none
	if len(spec.Tasks) > 0 {
		gtids = gtids[:0]
		for _, task := range spec.Tasks {
			gtids = append(gtids, strconv.Itoa(task.ProcID))
		}
	}
	set := [][2]string{
		{"SLURM_STEP_ID", step}, {"SLURM_STEPID", step},
		{"SLURM_PROCID", strconv.Itoa(t.ProcID)}, {"SLURM_LOCALID", strconv.Itoa(t.LocalID)},
		{"SLURM_NODEID", strconv.Itoa(spec.NodeIndex)}, {"SLURMD_NODENAME", host},
		{"SLURM_TOPOLOGY_ADDR", host}, {"SLURM_TOPOLOGY_ADDR_PATTERN", "node"},
		{"SLURM_GTIDS", strings.Join(gtids, ",")},
		{"SLURM_NTASKS", strconv.Itoa(spec.NTasks)}, {"SLURM_NPROCS", strconv.Itoa(spec.NTasks)},
		{"SLURM_STEP_NUM_TASKS", strconv.Itoa(spec.NTasks)},
		{"SLURM_STEP_NUM_NODES", strconv.Itoa(len(spec.Nodes))}, {"SLURM_NNODES", strconv.Itoa(len(spec.Nodes))},
		{"SLURM_STEP_NODELIST", sbatch.HostList(spec.Nodes)},
		{"SLURM_TASKS_PER_NODE", slurmapi.RepeatedCounts(perNode)},
		{"SLURM_STEP_TASKS_PER_NODE", slurmapi.RepeatedCounts(perNode)},
		{"SLURM_DISTRIBUTION", stepDistribution(spec, perNode)},
		{"PATH", job.pathWithDir(vars["PATH"])},
	}
	if spec.CPUsPerTask > 0 {
		set = append(set, [2]string{"SLURM_CPUS_PER_TASK", strconv.Itoa(spec.CPUsPerTask)})
	}
	if g := spec.GPUsPerTask; g > 0 {
		var gpus []string
		if v := vars["CUDA_VISIBLE_DEVICES"]; v != "" {
			gpus = strings.Split(v, ",")
		}
		if (t.LocalID+1)*g > len(gpus) {
			return nil, fmt.Errorf("task %d needs GPUs %d-%d of node %s, which has %d", t.ProcID, t.LocalID*g, (t.LocalID+1)*g-1, host, len(gpus))
		}
		set = append(set, [2]string{"CUDA_VISIBLE_DEVICES", strings.Join(gpus[t.LocalID*g:(t.LocalID+1)*g], ",")},
			[2]string{"SLURM_GPUS_PER_TASK", strconv.Itoa(g)})
	}
	for _, kv := range set {
		vars[kv[0]] = kv[1]
	}
	// The GPUs the task sees, as the container numbers them (the job's
	// SLURM_JOB_GPUS are numbered alike).
	if vars["SLURM_GPUS_ON_NODE"] != "" && vars["CUDA_VISIBLE_DEVICES"] != "" {
		vars["SLURM_STEP_GPUS"] = vars["CUDA_VISIBLE_DEVICES"]
		vars["GPU_DEVICE_ORDINAL"] = vars["CUDA_VISIBLE_DEVICES"]
	} else {
		delete(vars, "SLURM_STEP_GPUS")
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env, nil
}

// stepTaskCounts are the step's tasks on each of its nodes.
func stepTaskCounts(spec StepSpec) []int {
	if len(spec.TasksPerNode) == len(spec.Nodes) && len(spec.Nodes) > 0 {
		return spec.TasksPerNode
	}
	return slurmapi.BlockCounts(spec.NTasks, len(spec.Nodes))
}

// stepDistribution is SLURM_DISTRIBUTION of a step: srun -m's, else
// Slurm's default (srun 22.05: cyclic when no node has more than one
// task, which a block layout then equals, else block).
func stepDistribution(spec StepSpec, perNode []int) string {
	if spec.Distribution != "" {
		return spec.Distribution
	}
	if slices.Max(append([]int{0}, perNode...)) <= 1 {
		return "cyclic"
	}
	return "block"
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// lookPath finds name on the task's PATH (not the launcher's): an
// unfound name is left as it is and fails at start with ENOENT.
func lookPath(name, path, dir string) string {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) && dir != "" {
			return filepath.Join(dir, name)
		}
		return name
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return name
}

// taskOutput is where a task's stdout and stderr go: per-task files the
// node writes when the pattern names the task or node, else frames back
// to srun.
func taskOutput(job *Job, spec StepSpec, t TaskSlot, emit func(event)) (stdout, stderr io.Writer, closeFiles func(), err error) {
	var files []*os.File
	closeFiles = func() {
		for _, f := range files {
			f.Close()
		}
	}
	// srun takes the job's --open-mode from SLURM_OPEN_MODE, as sbatch exports it.
	flags := openFlags(OpenTruncate)
	if strings.HasPrefix(envValue(spec.Env, "SLURM_OPEN_MODE"), "a") {
		flags = openFlags(OpenAppend)
	}
	open := func(pattern string) (*os.File, error) {
		f, err := os.OpenFile(expandTaskPath(pattern, job, spec, t), flags, 0o644)
		if err == nil {
			files = append(files, f)
		}
		return f, err
	}
	stdout, stderr = &frameWriter{task: t.ProcID, stream: 1, emit: emit}, &frameWriter{task: t.ProcID, stream: 2, emit: emit}
	if spec.Output != "" {
		f, err := open(spec.Output)
		if err != nil {
			return nil, nil, closeFiles, fmt.Errorf("task %d output: %w", t.ProcID, err)
		}
		stdout, stderr = f, f
	}
	if spec.Error != "" {
		f, err := open(spec.Error)
		if err != nil {
			closeFiles()
			return nil, nil, closeFiles, fmt.Errorf("task %d error file: %w", t.ProcID, err)
		}
		stderr = f
	}
	return stdout, stderr, closeFiles, nil
}

// expandTaskPath expands srun's filename pattern for task t.
func expandTaskPath(pattern string, job *Job, spec StepSpec, t TaskSlot) string {
	id, _ := strconv.ParseUint(job.ID, 10, 32)
	node := ""
	if spec.NodeIndex < len(spec.Nodes) {
		node = spec.Nodes[spec.NodeIndex]
	}
	return sbatch.ExpandPath(pattern, spec.Cwd, sbatch.FilenameFields{JobID: uint32(id), Node: node,
		Step: strconv.Itoa(spec.Step), Task: t.ProcID, NodeIndex: spec.NodeIndex})
}

// perTask reports whether a filename pattern differs between tasks or
// nodes, so each node writes its tasks' files itself.
func perTask(pattern string) bool {
	for i := 0; i+1 < len(pattern); i++ {
		if pattern[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(pattern) && pattern[j] >= '0' && pattern[j] <= '9' {
			j++
		}
		if j < len(pattern) && strings.IndexByte("tnN", pattern[j]) >= 0 {
			return true
		}
		if j < len(pattern) && pattern[j] == '%' {
			i = j
		}
	}
	return false
}

// frameWriter turns a task's output into frames.
type frameWriter struct {
	task, stream int
	emit         func(event)
}

func (w *frameWriter) Write(p []byte) (int, error) {
	w.emit(event{Task: w.task, Stream: w.stream, Data: slices.Clone(p)})
	return len(p), nil
}
