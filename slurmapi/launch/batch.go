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
	if job.Node != 0 {
		select {
		case <-srv.done: // the batch script ended
			return 0
		case s := <-sigs: // the pod is deleted: the job was cancelled or timed out
			return 128 + int(s.(syscall.Signal))
		}
	}
	var rc int
	if job.Allocation {
		rc = holdAllocation(job, srv, sigs, stderr)
	} else {
		rc = runBatch(job, args, getenv, stdout, stderr, sigs)
	}
	if len(job.Peers) > 0 {
		shutdownPeers(job, stderr)
	}
	return rc
}

// holdAllocation is the batch host of an allocation (job/allocate: salloc,
// srun from a user's shell), which has no script: it serves attaches
// until the allocation is released, with the status of the user's
// command or shell, or the pod is deleted (scancel, the time limit). The
// steps that ran are reported as a batch host's are.
func holdAllocation(job *Job, srv *server, sigs <-chan os.Signal, stderr io.Writer) int {
	var rc int
	select {
	case rc = <-srv.released:
	case s := <-sigs:
		srv.killAll(s.(syscall.Signal))
		rc = 128 + int(s.(syscall.Signal))
	}
	srv.killAll(syscall.SIGKILL)
	if err := reportSteps(job, nil); err != nil {
		fmt.Fprintf(stderr, "sluice launch: %v\n", err)
	}
	return rc
}

// runBatch writes the script from the environment into the run directory
// and runs it, so the kernel starts it with its shebang interpreter as
// slurmd does. Its output goes to the output files (SLUICE_STDOUT,
// SLUICE_STDERR) and to the container's streams, so the pod log has it
// too. SIGTERM and SIGINT are passed to the script's process group.
func runBatch(job *Job, args []string, getenv func(string) string, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	script := filepath.Join(job.RunDir, "script")
	if err := os.WriteFile(script, []byte(getenv(EnvScript)), 0o700); err != nil {
		fmt.Fprintf(stderr, "sluice launch: write the batch script: %v\n", err)
		return 1
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
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "sluice launch: open %s: %v\n", p, err)
			return 1
		}
		files = append(files, f)
		t, err := newTee(io.MultiWriter(f, o.stream))
		if err != nil {
			fmt.Fprintf(stderr, "sluice launch: %v\n", err)
			return 1
		}
		tees = append(tees, t)
		for _, w := range o.to {
			*w = t.w
		}
	}
	if p := getenv(EnvStdin); p != "" {
		f, err := os.Open(p)
		if err != nil {
			fmt.Fprintf(stderr, "sluice launch: open the input file: %v\n", err)
			return 1
		}
		files = append(files, f)
		cmd.Stdin = f
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "sluice launch: start the batch script: %v\n", err)
		return 1
	}
	for _, t := range tees {
		t.w.Close() // the script holds its own copy
	}
	exited := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = syscall.Kill(-cmd.Process.Pid, s.(syscall.Signal))
			case <-exited:
				return
			}
		}
	}()
	_ = cmd.Wait() // the status is read from ProcessState
	close(exited)
	for _, t := range tees {
		<-t.done // the script's last output is written
	}
	end := time.Now()
	x := exitOf(cmd)
	batch := accounting.Step{StepID: accounting.BatchStep, Name: "batch", State: stepState(*x, false),
		ExitCode: x.Code, Signal: x.Signal, Start: start, End: end, Tasks: 1, NodeList: job.Hosts[0],
		TRES: accounting.TRES{CPUs: int64(max(job.CPUs, 1)), Nodes: 1}}
	batch.JobID, _ = strconv.ParseInt(job.ID, 10, 64)
	if err := reportSteps(job, &batch); err != nil {
		fmt.Fprintf(stderr, "sluice launch: %v\n", err)
	}
	return x.rc()
}

// batchEnv is the pod's environment for the script, less the script
// itself, with srun on PATH.
func batchEnv(job *Job, environ []string) []string {
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
