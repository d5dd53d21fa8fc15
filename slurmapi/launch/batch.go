package launch

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// EnvOpenMode is how the batch script's output and error files are
// opened (sbatch --open-mode): OpenAppend, or OpenTruncate (the default,
// Slurm's JobFileAppend=0), for every run of the job, a requeued one too.
const EnvOpenMode = "SLUICE_OPEN_MODE"

// The values of EnvOpenMode.
const (
	OpenAppend   = "append"
	OpenTruncate = "truncate"
)

// openFlags are the flags the batch script's output files are opened
// with in mode (EnvOpenMode).
func openFlags(mode string) int {
	if mode == OpenAppend {
		return os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	return os.O_CREATE | os.O_WRONLY | os.O_TRUNC
}

// Main is `sluice launch [ARGS...]`, the command of every pod of a Slurm
// job. On the batch host (node 0) it runs the batch script with ARGS and
// exits with its status; on the other nodes it serves step launches until
// the batch host says the job is over. getenv is the pod's environment.
func Main(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	job, err := JobFromEnv(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "sluice launch: %v\n", err)
		return 1
	}
	// Every node reads its own mounted copy before anything runs: the batch
	// script and attaches get the variables (batchEnv), srun's steps get
	// them from the script's environment, as srun exports it.
	if job.OwnEnv, err = readUserEnv(getenv); err != nil {
		fmt.Fprintf(stderr, "sluice launch: %v\n", err)
		return 1
	}
	enterWorkDir(getenv(EnvWorkDir), stderr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	var srv *server
	stop := func() {}
	if len(job.Peers) > 0 {
		if srv, stop, err = serve(ctx, job, getenv); err != nil {
			fmt.Fprintf(stderr, "sluice launch: %v\n", err)
			return 1
		}
	}
	defer stop()
	lim := &limiter{job: job, srv: srv, stderr: stderr}
	stopWarn := lim.warnAt(getenv, noteJobEnd(job, getenv, time.Now()))
	defer stopWarn()
	if job.Node != 0 {
		select {
		case <-srv.done: // the batch script ended
			return 0
		case s := <-sigs:
			// The pod is being deleted (scancel, the time limit, a
			// drain): this node's tasks get the signal and their grace.
			lim.terminate(s.(syscall.Signal))
			srv.waitIdle(srv.done, sigs)
			return 128 + int(s.(syscall.Signal))
		}
	}
	var rc int
	var terminated bool
	if job.Allocation {
		rc, terminated = holdAllocation(job, srv, lim, sigs, stderr)
	} else {
		rc, terminated = runBatch(job, args, getenv, stdout, stderr, sigs, lim)
	}
	// Being terminated, every node passes the signal to its own tasks and
	// waits for them: the batch host does not cut their grace short.
	if terminated {
		waitSteps(job, srv, sigs)
		if err := reportSteps(job); err != nil {
			fmt.Fprintf(stderr, "sluice launch: %v\n", err)
		}
	} else if len(job.Peers) > 0 {
		shutdownPeers(job, stderr)
	}
	return rc
}

// holdAllocation is the batch host of an allocation (job/allocate: salloc,
// srun from a user's shell), which has no script: it serves attaches
// until the allocation is released, with the status of the user's
// command or shell, or the pod is deleted (scancel, the time limit). The
// steps that ran are reported as a batch host's are.
func holdAllocation(job *Job, srv *server, lim *limiter, sigs <-chan os.Signal, stderr io.Writer) (rc int, terminated bool) {
	select {
	case rc = <-srv.released:
	case s := <-sigs:
		lim.terminate(s.(syscall.Signal))
		rc, terminated = 128+int(s.(syscall.Signal)), true
		if err := reportSteps(job); err != nil { // in case the grace runs out
			fmt.Fprintf(stderr, "sluice launch: %v\n", err)
		}
		srv.waitIdle(nil, sigs)
	}
	srv.killAll(syscall.SIGKILL)
	if err := reportSteps(job); err != nil {
		fmt.Fprintf(stderr, "sluice launch: %v\n", err)
	}
	return rc, terminated
}

// runBatch writes the script from the environment into the run directory
// and runs it, so the kernel starts it with its shebang interpreter as
// slurmd does. Its output goes to the output files (SLUICE_STDOUT,
// SLUICE_STDERR, opened as SLUICE_OPEN_MODE says) and to the container's
// streams, so the pod log has it too. SIGTERM and SIGINT are passed to
// the script's process group.
func runBatch(job *Job, args []string, getenv func(string) string, stdout, stderr io.Writer, sigs <-chan os.Signal, lim *limiter) (rc int, terminated bool) {
	script := filepath.Join(job.RunDir, "script")
	if err := os.WriteFile(script, []byte(getenv(EnvScript)), 0o700); err != nil {
		fmt.Fprintf(stderr, "sluice launch: write the batch script: %v\n", err)
		return 1, false
	}
	cmd := exec.Command(script, args...)
	cmd.Env = batchEnv(job, os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var tees []*tee
	defer func() {
		for _, t := range tees {
			t.w.Close()
		}
	}()
	// Without --error both streams go through one pipe, so the file keeps
	// their order as a shared descriptor would (and the pod log has both
	// on stdout, as before the launcher).
	for _, o := range []struct {
		env    string
		stream io.Writer
		to     []*io.Writer
	}{{EnvStdout, stdout, []*io.Writer{&cmd.Stdout, &cmd.Stderr}}, {EnvStderr, stderr, []*io.Writer{&cmd.Stderr}}} {
		p := getenv(o.env)
		if p == "" {
			continue
		}
		f, err := os.OpenFile(p, openFlags(getenv(EnvOpenMode)), 0o644)
		if err != nil {
			// As slurmstepd: the job fails before its script runs (a missing
			// directory is the usual cause: Slurm does not make it).
			fmt.Fprintf(stderr, "slurmstepd: error: Could not open %s file %s: %s\n", strings.TrimPrefix(strings.ToLower(o.env), "sluice_"), p, strerror(err))
			return 1, false
		}
		files = append(files, f)
		t, err := newTee(io.MultiWriter(f, o.stream))
		if err != nil {
			fmt.Fprintf(stderr, "sluice launch: %v\n", err)
			return 1, false
		}
		tees = append(tees, t)
		for _, w := range o.to {
			*w = t.w
		}
	}
	if p := getenv(EnvStdin); p != "" {
		f, err := os.Open(p)
		if err != nil {
			fmt.Fprintf(stderr, "slurmstepd: error: Could not open stdin file %s: %s\n", p, strerror(err))
			return 1, false
		}
		files = append(files, f)
		cmd.Stdin = f
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "sluice launch: start the batch script: %v\n", err)
		return 1, false
	}
	for _, t := range tees {
		t.w.Close() // the script holds its own copy
	}
	lim.batchStarted(cmd.Process.Pid)
	if err := appendStep(job, batchStep(job, start)); err != nil { // RUNNING while it runs
		fmt.Fprintf(stderr, "sluice launch: %v\n", err)
	}
	exited := make(chan struct{})
	var mu sync.Mutex // orders the reports: the last one is the script's end
	reported := false
	go func() {
		for {
			select {
			case s := <-sigs:
				mu.Lock()
				if !reported {
					terminated = true
					lim.terminate(s.(syscall.Signal))
					// If the grace runs out before the script ends, the
					// steps so far are the pod's report.
					reportBatch(job, start, time.Now(), nil, true, stderr)
				}
				mu.Unlock()
			case <-exited:
				return
			}
		}
	}()
	_ = cmd.Wait() // the status is read from ProcessState
	lim.batchEnded()
	close(exited)
	for _, t := range tees {
		<-t.done // the script's last output is written
	}
	x := exitOf(cmd)
	mu.Lock()
	defer mu.Unlock()
	reportBatch(job, start, time.Now(), x, terminated, stderr)
	reported = true
	return x.rc(), terminated
}

// reportBatch records the batch step (ended with x, nil if it runs on;
// CANCELLED when terminated: the pod is being deleted, as Slurm records
// the batch step of a job cancelled or timed out) and leaves the job's
// steps as the report.
func reportBatch(job *Job, start, end time.Time, x *taskExit, terminated bool, stderr io.Writer) {
	batch := batchStep(job, start)
	batch.State, batch.End = accounting.StateCancelled, end
	if x != nil {
		batch.State, batch.ExitCode, batch.Signal = stepState(*x, terminated), x.Code, x.Signal
	}
	if err := appendStep(job, batch); err != nil {
		fmt.Fprintf(stderr, "sluice launch: %v\n", err)
	}
	if err := reportSteps(job); err != nil {
		fmt.Fprintf(stderr, "sluice launch: %v\n", err)
	}
}

// batchStep is the batch script's step, RUNNING since start.
func batchStep(job *Job, start time.Time) accounting.Step {
	id, _ := strconv.ParseInt(job.ID, 10, 64)
	return accounting.Step{JobID: id, StepID: accounting.BatchStep, Name: "batch", State: accounting.StateRunning,
		Start: start, Tasks: 1, NodeList: job.Hosts[0], TRES: accounting.TRES{CPUs: int64(max(job.CPUs, 1)), Nodes: 1}}
}

// batchEnv is the pod's environment for the script, with the job's own
// variables and less the script itself, with srun on PATH.
func batchEnv(job *Job, environ []string) []string {
	environ = withUserEnv(environ, job.OwnEnv)
	out := make([]string, 0, len(environ))
	path := ""
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case EnvScript:
		case "PATH":
			path = v
		default:
			out = append(out, kv)
		}
	}
	return append(out, "PATH="+job.pathWithDir(path))
}

// stepState is the Slurm state of a step that ended with x.
func stepState(x taskExit, cancelled bool) accounting.JobState {
	switch {
	case cancelled:
		return accounting.StateCancelled
	case x.Signal == int(syscall.SIGKILL) || x.Signal == int(syscall.SIGTERM):
		return accounting.StateCancelled
	case x.rc() != 0:
		return accounting.StateFailed
	}
	return accounting.StateCompleted
}

// shutdownPeers ends the other nodes' launchers: the job is over.
func shutdownPeers(job *Job, stderr io.Writer) {
	p, err := newPeers(job)
	if err != nil {
		fmt.Fprintf(stderr, "sluice launch: %v\n", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), launchWait)
	defer cancel()
	var wg sync.WaitGroup
	for i := 1; i < len(job.Peers); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A launcher still starting is waited for; one that never
			// comes up goes with the job's pods when the job ends.
			if resp, err := p.postWhenUp(ctx, i, pathShutdown, struct{}{}, launchWait); err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
}

// tee copies what the script writes into w's pipe to a writer.
type tee struct {
	w    *os.File
	done chan struct{}
}

func newTee(dst io.Writer) (*tee, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	t := &tee{w: w, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		defer r.Close()
		_, _ = io.Copy(dst, r)
	}()
	return t, nil
}
