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
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/slurmapi"
)

// Srun is `srun [OPTIONS] COMMAND [ARGS...]` inside a job: it starts one
// step of the command across the allocation, gives its stdin to task 0
// (srun's default --input), forwards the tasks' output, passes SIGINT and
// SIGTERM to every task and exits with the highest task status (128+N
// for a task ended by signal N), as srun does.
func Srun(args []string, getenv func(string) string, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "srun: error: %v\n", err)
		return 1
	}
	job, err := JobFromEnv(getenv)
	if err != nil {
		return fail(err)
	}
	o, err := parseSrun(args, getenv)
	if err != nil {
		return fail(err)
	}
	mpi, err := mpiType(getenv("SLURM_MPI_TYPE"))
	if err != nil {
		return fail(err)
	}
	counts, err := layout(o, len(job.Hosts), job.JobTasks)
	if err != nil {
		return fail(err)
	}
	var p *peers
	for i := range counts {
		if i != job.Node && p == nil {
			if p, err = newPeers(job); err != nil {
				return fail(err)
			}
		}
	}
	stepID, err := nextStepID(job)
	if err != nil {
		return fail(err)
	}
	cwd, _ := os.Getwd()
	out, errOut, closeSinks, err := stepSinks(o, job, stepID, cwd, stdout, stderr)
	if err != nil {
		return fail(err)
	}
	defer closeSinks()
	r := &stepRun{job: job, opts: o, peers: p, step: stepID, counts: counts,
		exits: map[int]taskExit{}, out: newLabeler(out, o.label, sum(counts)), errOut: newLabeler(errOut, o.label, sum(counts)),
		stderr: stderr, nodeOfTask: map[int]int{}, stdin: stdin}
	r.pmi = newPMIHub(r, mpi)
	specs := r.specs(cwd, exportEnv(o.export, environ))
	r.pmi.addTo(specs)
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
	r.run(specs, getenv)
	close(finished)
	r.out.flush()
	r.errOut.flush()
	return r.finish(start)
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
	counts     []int
	out        *labeler
	errOut     *labeler
	stderr     io.Writer
	nodeOfTask map[int]int
	stdin      io.Reader // srun's, for task 0
	pmi        *pmiHub   // --mpi=pmi2: joins the nodes' fences (pmi_fence.go)

	mu        sync.Mutex
	exits     map[int]taskExit
	local     *nodeStep
	cancelled bool
	killed    bool
}

// specs is each step node's part of the step.
func (r *stepRun) specs(cwd string, env []string) []StepSpec {
	nodes := r.job.Hosts[:len(r.counts)]
	specs := make([]StepSpec, len(r.counts))
	proc := 0
	for i, c := range r.counts {
		s := StepSpec{JobID: r.job.ID, Step: r.step, Argv: r.opts.argv, Cwd: cwd, Env: env, Nodes: nodes,
			NodeIndex: i, NTasks: sum(r.counts), GPUsPerTask: r.opts.gpusPerTask, CPUsPerTask: r.opts.cpusPerTask}
		if perTask(r.opts.output) {
			s.Output = r.opts.output
		}
		if perTask(r.opts.errorFile) {
			s.Error = r.opts.errorFile
		}
		// Task 0 is the first of the step's first node: srun's stdin goes
		// there, streamed when that node is another's.
		s.Stdin = i == 0 && i != r.job.Node
		for l := range c {
			s.Tasks = append(s.Tasks, TaskSlot{ProcID: proc, LocalID: l})
			r.nodeOfTask[proc] = i
			proc++
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
			if i == r.job.Node {
				err = r.runLocal(s, getenv)
			} else {
				err = r.runRemote(i, s)
			}
			if err != nil {
				fmt.Fprintf(r.stderr, "srun: error: %s: task launch failed: %v\n", r.job.Hosts[i], err)
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
// (and with --kill-on-bad-exit a failure ends the step).
func (r *stepRun) handle(e event) {
	switch {
	case e.PMI != nil:
		r.pmi.handle(e.PMI)
	case e.Exit != nil:
		r.mu.Lock()
		r.exits[e.Task] = *e.Exit
		bad := r.opts.killOnBadExit && e.Exit.rc() != 0 && !r.killed
		r.mu.Unlock()
		if bad {
			fmt.Fprintf(r.stderr, "srun: error: task %d exited with status %d: terminating StepId=%s.%d\n", e.Task, e.Exit.rc(), r.job.ID, r.step)
			r.kill()
		}
	case e.Stream == 1:
		r.out.write(e.Task, e.Data)
	case e.Stream == 2:
		r.errOut.write(e.Task, e.Data)
	}
}

// kill ends every task of the step.
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
	for i := range r.counts {
		if i == r.job.Node {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.peers.call(ctx, i, pathSignal, signalRequest{Step: r.step, Signal: int(sig), Nonce: nonce()}); err != nil {
				fmt.Fprintf(r.stderr, "srun: error: signal %s: %v\n", r.job.Hosts[i], err)
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
		host := r.job.Hosts[r.nodeOfTask[t]]
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
		Start: start, Tasks: int64(n), NodeList: slurmapi.HostList(r.job.Hosts[:len(r.counts)]),
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
		f, err := os.OpenFile(expandTaskPath(pattern, job, spec, TaskSlot{}), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
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
