package launch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Srun is `srun [OPTIONS] COMMAND [ARGS...]` inside a job: it starts one
// step of the command across the allocation, gives its stdin to task 0
// (srun's default --input), forwards the tasks' output, passes SIGINT and
// SIGTERM to every task and exits with the highest task status (128+N
// for a task ended by signal N), as srun does. Its options are
// srunTable's: each honoured, warned about or refused.
func Srun(args []string, getenv func(string) string, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, warnings, err := parseSrun(args, getenv)
	if err != nil {
		return srunFail(stderr, err)
	}
	if o.print != "" {
		fmt.Fprint(stdout, o.print)
		return 0
	}
	job, err := JobFromEnv(getenv)
	if err != nil {
		return srunFail(stderr, err)
	}
	plan, more, err := planStep(o, job, allocationFromEnv(job, getenv, environ))
	if err != nil {
		return srunFail(stderr, err)
	}
	warn := func(ws []string) {
		if !o.quiet {
			for _, w := range ws {
				fmt.Fprintf(stderr, "srun: warning: %s\n", w)
			}
		}
	}
	mpi, err := mpiType(o.mpi)
	if err != nil {
		return srunFail(stderr, err)
	}
	warn(append(warnings, more...))
	return runStep(o, job, plan, mpi, getenv, environ, stdin, stdout, stderr, warn)
}

// srunFail reports a refusal as srun does: a mistake in the command line
// as getopt words it, anything else as an error; srun exits 1.
func srunFail(stderr io.Writer, err error) int {
	var u usageError
	if errors.As(err, &u) {
		fmt.Fprintf(stderr, "srun: %v\nTry \"srun --help\" for more information\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "srun: error: %v\n", err)
	return 1
}

// killWait is Slurm's KillWait default: when srun ends a step itself (a
// task's bad exit with -K, the end of -W's wait, the step's -t limit) its
// tasks get SIGTERM, then SIGKILL this long after if they still run.
const killWait = 30 * time.Second

// runStep runs the planned step and returns srun's exit status.
func runStep(o *srunOptions, job *Job, plan *stepPlan, mpi string, getenv func(string) string, environ []string,
	stdin io.Reader, stdout, stderr io.Writer, warn func([]string)) int {
	fail := func(err error) int { return srunFail(stderr, err) }
	var p *peers
	var err error
	for _, n := range plan.nodes {
		if n != job.Node && p == nil {
			if p, err = newPeers(job); err != nil {
				return fail(err)
			}
		}
	}
	stepID, err := nextStepID(job)
	if err != nil {
		return fail(err)
	}
	srunCwd, _ := os.Getwd()
	cwd := stepCwd(o, srunCwd)
	counts := plan.counts()
	in, inWarn, closeIn, err := stepInput(o, job, plan, stepID, cwd, stdin)
	if err != nil {
		return fail(err)
	}
	defer closeIn()
	warn(inWarn)
	out, errOut, closeSinks, err := stepSinks(o, job, stepID, cwd, stdout, stderr)
	if err != nil {
		return fail(err)
	}
	defer closeSinks()
	hookEnv := append(slices.Clone(environ), "SLURM_STEP_ID="+strconv.Itoa(stepID), "SLURM_STEPID="+strconv.Itoa(stepID))
	if o.prolog != "" && o.prolog != "none" {
		if rc := runHook(o.prolog, o.argv, hookEnv, srunCwd, stdout, stderr); rc != 0 {
			return fail(fmt.Errorf("srun prolog failed rc = %d. Aborting step.", rc))
		}
	}
	r := &stepRun{job: job, opts: o, peers: p, step: stepID, nodes: plan.nodes, tasks: plan.tasks, counts: counts,
		exits: map[int]taskExit{}, out: newLabeler(out, o.label, sum(counts)), errOut: newLabeler(errOut, o.label, sum(counts)),
		stderr: stderr, nodeOfTask: map[int]int{}, stdin: in, done: make(chan struct{})}
	r.pmi = newPMIHub(r, mpi)
	specs := r.specs(cwd, stepEnv(o, environ))
	r.pmi.addTo(specs)
	if o.verbose > 0 && !o.quiet {
		for i, s := range specs {
			ids := make([]int, len(s.Tasks))
			for k, t := range s.Tasks {
				ids[k] = t.ProcID
			}
			fmt.Fprintf(stderr, "srun: launching StepId=%s.%d on host %s, %d tasks: %s\n", job.ID, stepID, job.Hosts[r.nodes[i]], len(ids), taskRanges(ids))
		}
	}
	start := time.Now()
	// The step is known as RUNNING while it runs (job/{id}, sacct).
	if err := recordStep(job, r.record(start)); err != nil {
		fmt.Fprintf(stderr, "srun: error: record step %d: %v\n", stepID, err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stepSignals(getenv)...)
	defer signal.Stop(sigs)
	// scancel JOB.STEP finds this srun by its step id (steps_signal.go).
	removePid := writeStepPid(job, stepID)
	defer removePid()
	finished := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				sig := s.(syscall.Signal)
				if sig == syscall.SIGINT || sig == syscall.SIGTERM {
					r.mu.Lock()
					r.cancelled = true
					r.mu.Unlock()
				}
				if sig == syscall.SIGTERM && terminating(job) {
					// The pods are being deleted: every node's launcher
					// passes the SIGTERM to its own tasks; srun's are here.
					r.signalLocal(sig)
					continue
				}
				r.signalAll(sig)
			case <-finished:
				return
			}
		}
	}()
	if o.signal != nil {
		// srun --signal: this step's tasks get it before the job's end.
		if end := readJobEnd(job); !end.IsZero() {
			sig := syscall.Signal(o.signal.Num)
			stopWarn := afterUntil(end.Add(-time.Duration(o.signal.Before)*time.Second), func() { r.signalAll(sig) })
			defer stopWarn()
		}
	}
	if o.timeLimit > 0 {
		// srun -t: the step's own limit, ended as slurmstepd ends it.
		limit := time.AfterFunc(o.timeLimit, func() {
			r.mu.Lock()
			r.timedOut = true
			r.mu.Unlock()
			fmt.Fprintf(stderr, "slurmstepd: error: *** STEP %s.%d ON %s CANCELLED AT %s DUE TO TIME LIMIT ***\n",
				job.ID, stepID, job.Hosts[r.nodes[0]], time.Now().Format("2006-01-02T15:04:05"))
			r.terminate(killWait)
		})
		defer limit.Stop()
	}
	r.run(specs, getenv)
	close(finished)
	close(r.done)
	r.out.flush()
	r.errOut.flush()
	rc := r.finish(start)
	if o.epilog != "" && o.epilog != "none" {
		if erc := runHook(o.epilog, o.argv, hookEnv, srunCwd, stdout, stderr); erc != 0 {
			fmt.Fprintf(stderr, "srun: error: srun epilog failed status=%d\n", erc)
		}
	}
	return rc
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// stepRun is one srun's step in flight.
type stepRun struct {
	job        *Job
	opts       *srunOptions
	peers      *peers
	step       int
	nodes      []int   // the step's nodes: indices into job.Hosts
	tasks      [][]int // each step node's task ids
	counts     []int   // each step node's task count
	out        *labeler
	errOut     *labeler
	stderr     io.Writer
	nodeOfTask map[int]int // a task's step node
	stdin      io.Reader   // task 0's input (-i); nil: none
	pmi        *pmiHub     // --mpi=pmi2: joins the nodes' fences (pmi_fence.go)
	done       chan struct{}

	mu          sync.Mutex
	exits       map[int]taskExit
	local       *nodeStep
	cancelled   bool
	killed      bool // no task is to run on: a late start is killed
	terminating bool // SIGTERM sent, SIGKILL to follow (terminate)
	timedOut    bool // -t's limit ended the step
	anyExited   bool
}

// hosts are the step's node names.
func (r *stepRun) hosts() []string {
	h := make([]string, len(r.nodes))
	for i, n := range r.nodes {
		h[i] = r.job.Hosts[n]
	}
	return h
}

// specs is each step node's part of the step.
func (r *stepRun) specs(cwd string, env []string) []StepSpec {
	nodes := r.hosts()
	specs := make([]StepSpec, len(r.tasks))
	for i, ids := range r.tasks {
		s := StepSpec{JobID: r.job.ID, Step: r.step, Argv: r.opts.argv, Cwd: cwd, Env: env, Nodes: nodes,
			NodeIndex: i, NTasks: sum(r.counts), GPUsPerTask: r.opts.gpusPerTask, CPUsPerTask: r.opts.cpusPerTask,
			TasksPerNode: r.counts, Distribution: r.opts.distribution}
		if perTask(r.opts.output) {
			s.Output = r.opts.output
		}
		if perTask(r.opts.errorFile) {
			s.Error = r.opts.errorFile
		}
		// Task 0 is the first of the step's first node: its input goes
		// there, streamed when that node is another's.
		s.Stdin = i == 0 && r.nodes[0] != r.job.Node && r.stdin != nil
		for l, proc := range ids {
			s.Tasks = append(s.Tasks, TaskSlot{ProcID: proc, LocalID: l})
			r.nodeOfTask[proc] = i
		}
		specs[i] = s
	}
	return specs
}

// run starts every node's tasks and returns once all have ended.
func (r *stepRun) run(specs []StepSpec, getenv func(string) string) {
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			node := r.nodes[i]
			if node == r.job.Node {
				err = r.runLocal(s, getenv)
			} else {
				err = r.runRemote(node, s)
			}
			if err != nil {
				fmt.Fprintf(r.stderr, "srun: error: %s: task launch failed: %v\n", r.job.Hosts[node], err)
				r.mu.Lock()
				for _, t := range s.Tasks {
					if _, ok := r.exits[t.ProcID]; !ok {
						r.exits[t.ProcID] = taskExit{Code: 1}
					}
				}
				r.mu.Unlock()
				r.kill() // a step that cannot start everywhere does not run anywhere
			}
		}()
	}
	wg.Wait()
}

func (r *stepRun) runLocal(s StepSpec, getenv func(string) string) error {
	var in io.Reader
	if s.NodeIndex == 0 {
		in = r.stdin // task 0 runs here
	}
	st, err := startNodeStep(r.job, s, getenv, r.handle, in)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.local = st
	killed := r.killed || r.cancelled
	r.mu.Unlock()
	if killed {
		st.signal(syscall.SIGKILL)
	}
	st.wait()
	return nil
}

// runRemote starts node's tasks through its launcher and reads their
// output and exits until the node's answer ends. A launcher that is not
// up yet (its pod still starting) is retried for a while.
func (r *stepRun) runRemote(node int, s StepSpec) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := r.peers.postWhenUp(ctx, node, pathLaunch, s, launchWait)
	if err != nil {
		return err
	}
	if s.Stdin {
		go r.pumpStdin(ctx, node)
	}
	resp := a.Body
	defer resp.Close()
	dec := json.NewDecoder(bufio.NewReader(resp))
	for {
		var e event
		if err := dec.Decode(&e); err != nil {
			if err == io.EOF {
				break
			}
			return fmt.Errorf("lost the launcher: %w", err)
		}
		if e.Err != "" {
			return errors.New(e.Err)
		}
		r.handle(e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range s.Tasks {
		if _, ok := r.exits[t.ProcID]; !ok {
			return fmt.Errorf("the launcher's answer ended before task %d did", t.ProcID)
		}
	}
	return nil
}

// handle takes one event of a task: output to the sinks, an exit noted
// (with --kill-on-bad-exit a failure ends the step; with --wait the first
// exit starts the wait for the others).
func (r *stepRun) handle(e event) {
	switch {
	case e.PMI != nil:
		r.pmi.handle(e.PMI)
	case e.Exit != nil:
		r.mu.Lock()
		r.exits[e.Task] = *e.Exit
		bad := r.opts.killOnBadExit && e.Exit.rc() != 0 && !r.killed
		first := !r.anyExited
		r.anyExited = true
		r.mu.Unlock()
		if bad {
			fmt.Fprintf(r.stderr, "srun: error: task %d exited with status %d: terminating StepId=%s.%d\n", e.Task, e.Exit.rc(), r.job.ID, r.step)
			r.terminate(killWait)
		}
		if first && r.opts.wait > 0 {
			time.AfterFunc(r.opts.wait, r.waitEnded)
		}
	case e.Stream == 1:
		r.out.write(e.Task, e.Data)
	case e.Stream == 2:
		r.errOut.write(e.Task, e.Data)
	}
}

// waitEnded is the end of -W's wait after the first task's exit: the
// tasks still running are ended.
func (r *stepRun) waitEnded() {
	r.mu.Lock()
	running := len(r.exits) < sum(r.counts)
	r.mu.Unlock()
	select {
	case <-r.done:
		return
	default:
	}
	if !running {
		return
	}
	if !r.opts.quiet {
		fmt.Fprintf(r.stderr, "srun: First task exited %ds ago\n", int(r.opts.wait/time.Second))
	}
	r.terminate(killWait)
}

// terminate ends the step as Slurm ends one: SIGTERM to every task, then
// SIGKILL after wait to those still running.
func (r *stepRun) terminate(wait time.Duration) {
	r.mu.Lock()
	if r.terminating {
		r.mu.Unlock()
		return
	}
	r.terminating, r.killed = true, true
	r.mu.Unlock()
	r.signalAll(syscall.SIGTERM)
	go func() {
		select {
		case <-time.After(wait):
			r.signalAll(syscall.SIGKILL)
		case <-r.done:
		}
	}()
}

// kill ends every task of the step at once (a step that could not
// start everywhere).
func (r *stepRun) kill() {
	r.mu.Lock()
	r.killed = true
	r.mu.Unlock()
	r.signalAll(syscall.SIGKILL)
}

// signalLocal passes sig to the tasks srun runs on its own node.
func (r *stepRun) signalLocal(sig syscall.Signal) {
	r.mu.Lock()
	local := r.local
	r.mu.Unlock()
	local.signal(sig)
}

// signalAll passes sig to every node's tasks.
func (r *stepRun) signalAll(sig syscall.Signal) {
	r.mu.Lock()
	local := r.local
	r.mu.Unlock()
	local.signal(sig)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, node := range r.nodes {
		if node == r.job.Node {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.peers.call(ctx, node, pathSignal, signalRequest{Step: r.step, Signal: int(sig), Nonce: nonce()}); err != nil {
				fmt.Fprintf(r.stderr, "srun: error: signal %s: %v\n", r.job.Hosts[node], err)
			}
		}()
	}
	wg.Wait()
}

// finish reports failed tasks as srun does, records the step and returns
// srun's exit status.
func (r *stepRun) finish(start time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc, code, sig := 0, 0, 0
	for t := range sum(r.counts) {
		x := r.exits[t]
		host := r.job.Hosts[r.nodes[r.nodeOfTask[t]]]
		switch {
		case x.Signal != 0:
			fmt.Fprintf(r.stderr, "srun: error: %s: task %d: %s\n", host, t, signalName(x.Signal))
			sig = x.Signal
		case x.Code != 0:
			fmt.Fprintf(r.stderr, "srun: error: %s: task %d: Exited with exit code %d\n", host, t, x.Code)
		}
		rc, code = max(rc, x.rc()), max(code, x.Code)
	}
	state := accounting.StateCompleted
	switch {
	case r.timedOut:
		state = accounting.StateTimeout
	case r.cancelled:
		state = accounting.StateCancelled
	case rc != 0:
		state = accounting.StateFailed
	}
	step := r.record(start)
	step.State, step.ExitCode, step.Signal, step.End = state, code, sig, time.Now()
	if err := recordStep(r.job, step); err != nil {
		fmt.Fprintf(r.stderr, "srun: error: record step %d: %v\n", r.step, err)
	}
	return rc
}

// record is the step as the ledger keeps it, RUNNING since start.
func (r *stepRun) record(start time.Time) accounting.Step {
	n := sum(r.counts)
	jobID, _ := strconv.ParseInt(r.job.ID, 10, 64)
	name := r.opts.name
	if name == "" {
		name = filepath.Base(r.opts.argv[0])
	}
	return accounting.Step{JobID: jobID, StepID: strconv.Itoa(r.step), Name: name, State: accounting.StateRunning,
		Start: start, Tasks: int64(n), NodeList: sbatch.HostList(r.hosts()),
		TRES: accounting.TRES{CPUs: int64(n * max(r.opts.cpusPerTask, 1)), GPUs: float64(n * r.opts.gpusPerTask), Nodes: int64(len(r.counts))}}
}

func signalName(sig int) string {
	switch syscall.Signal(sig) {
	case syscall.SIGKILL:
		return "Killed"
	case syscall.SIGTERM:
		return "Terminated"
	}
	return syscall.Signal(sig).String()
}

// stepSinks are where output that is not per task goes: srun's own
// streams, or the one file -o/-e names (patterns %j %s expanded).
func stepSinks(o *srunOptions, job *Job, step int, cwd string, stdout, stderr io.Writer) (out, errOut io.Writer, closeAll func(), err error) {
	var files []*os.File
	closeAll = func() {
		for _, f := range files {
			f.Close()
		}
	}
	spec := StepSpec{Step: step, Cwd: cwd, Nodes: job.Hosts}
	open := func(pattern string) (*os.File, error) {
		mode := os.O_TRUNC // --open-mode
		if o.appendOutput {
			mode = os.O_APPEND
		}
		f, err := os.OpenFile(expandTaskPath(pattern, job, spec, TaskSlot{}), os.O_CREATE|os.O_WRONLY|mode, 0o644)
		if err == nil {
			files = append(files, f)
		}
		return f, err
	}
	out, errOut = stdout, stderr
	if o.output != "" && !perTask(o.output) {
		f, err := open(o.output)
		if err != nil {
			return nil, nil, closeAll, err
		}
		out, errOut = f, f
	}
	if o.errorFile != "" && !perTask(o.errorFile) {
		f, err := open(o.errorFile)
		if err != nil {
			closeAll()
			return nil, nil, closeAll, err
		}
		errOut = f
	}
	return out, errOut, closeAll, nil
}
