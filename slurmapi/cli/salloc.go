package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/launch"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

func init() {
	register(Command{Name: "salloc", Summary: "allocate a job and run a shell with it (like Slurm's salloc)", Run: runSalloc,
		Flags: func() *flag.FlagSet { fs, _ := interactiveFlags("salloc"); return fs }})
}

// runSalloc allocates a job, runs the user's command (their shell by
// default) here with the job's variables, so `sluice srun` inside runs
// steps in the job, and releases the job with the command's status.
func runSalloc(args []string) error {
	o, err := parseInteractive("salloc", args)
	if err != nil || o.help {
		return err
	}
	so := o.salloc
	switch {
	case so.Help:
		interactiveUsage(os.Stdout, "salloc")
		return nil
	case so.Usage:
		fmt.Println("Usage: salloc [OPTIONS...] [command [args...]]")
		return nil
	case so.Version:
		fmt.Printf("slurm %s (sluice %s)\n", launch.SlurmRelease, Version)
		return nil
	}
	if o.jobID != 0 {
		return UsageError{"salloc makes a new allocation; --jobid belongs to srun"}
	}
	job, err := allocationJob(o)
	if err != nil {
		return err
	}
	c, _, cancel, err := connect(o.token, time.Minute)
	if err != nil {
		return err
	}
	cancel()
	ctx := context.Background()
	var info io.Writer = os.Stderr // salloc's informational messages; -Q: none
	if so.Quiet {
		info = io.Discard
	}
	actx := ctx
	if so.Immediate > 0 {
		var stop context.CancelFunc
		actx, stop = context.WithTimeout(ctx, so.Immediate)
		defer stop()
	}
	asked := time.Now()
	a, err := allocateWith(actx, c, job, "salloc", info)
	if err != nil {
		if so.Immediate > 0 && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("Immediate allocation not granted within %s (--immediate); the job is cancelled", so.Immediate)
		}
		return err
	}
	fmt.Fprintf(info, "salloc: Granted job allocation %d\n", a.ID)
	if so.Bell == sbatch.BellAlways || (so.Bell == sbatch.BellAfterDelay && time.Since(asked) > sbatch.BellDelay && term.IsTerminal(int(os.Stderr.Fd()))) {
		fmt.Fprint(os.Stderr, "\a")
	}
	if so.NoShell {
		// As salloc --no-shell: the allocation stays until scancel or its
		// time limit; sluice srun --jobid=N runs steps in it.
		return nil
	}
	argv := o.command
	if len(argv) == 0 {
		argv = []string{os.Getenv("SHELL")}
		if argv[0] == "" {
			argv[0] = "/bin/sh"
		}
	}
	// The allocation is held while salloc lives: killed or cut off, it is
	// released after the inactive limit. The command starts once the hold is
	// in place, when the batch host is up, as salloc waits for its nodes.
	hctx, stopHold := context.WithCancel(ctx)
	defer stopHold()
	ready := make(chan struct{})
	fmt.Fprintln(info, "salloc: Waiting for resource configuration")
	go launch.Hold(hctx, c, a.ID, info, func() { close(ready) })
	<-ready
	// SIGTERM and SIGHUP are caught from before salloc says the nodes are ready (a
	// signal that came between that line and the command's start killed salloc and
	// left the job held); the command gets them once it runs.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	fmt.Fprintf(info, "salloc: Nodes %s are ready for job\n", a.Job.Nodes)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Dir = o.alloc.Chdir // salloc -D: the command runs there (the job's tasks too)
	cmd.Env = append(os.Environ(), launch.AllocationEnv(a, c)...)
	if o.token != "" {
		cmd.Env = append(cmd.Env, "SLURM_JWT="+o.token)
	}
	// The shell handles the terminal's signals; salloc waits for it.
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTSTP)
	rc := 0
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "salloc: error: %v\n", err)
		rc = 1
	} else {
		defer hangUpOnSignal(cmd, a.ID, sigs)()
		stopWatch := func() {}
		if so.KillCommand != 0 {
			// salloc -K: the command gets the signal once the allocation
			// is revoked (scancel, its time limit).
			stopWatch = watchRevoked(ctx, c, a.ID, func() {
				fmt.Fprintf(os.Stderr, "salloc: Job allocation %d has been revoked.\n", a.ID)
				_ = cmd.Process.Signal(syscall.Signal(so.KillCommand))
			})
		}
		rc = commandStatus(cmd.Wait())
		stopWatch()
		stopHold() // before the release, which ends the allocation
	}
	fmt.Fprintf(info, "salloc: Relinquishing job allocation %d\n", a.ID)
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer rcancel()
	if err := launch.Release(rctx, c, a.ID, rc); err != nil {
		// The job must not hold its GPUs after the shell: cancel it.
		fmt.Fprintf(os.Stderr, "salloc: error: release job %d: %v; cancelling it\n", a.ID, err)
		_ = c.Cancel(rctx, a.ID, "")
	}
	return ExitWith(rc)
}

// commandKillWait is how long a command hung up by salloc's SIGTERM or
// SIGHUP has before SIGKILL (Slurm's KillWait).
const commandKillWait = 30 * time.Second

// hangUpOnSignal makes a salloc ended by SIGTERM or SIGHUP (its terminal
// closed, a session manager stopping it) relinquish its allocation instead
// of leaving the job RUNNING with nobody to use it: the command gets SIGHUP
// (what a closing terminal sends; an interactive shell ignores SIGTERM),
// SIGKILL after commandKillWait, and salloc then releases the job as when
// the command exits. sigs is notified of SIGTERM and SIGHUP. The returned
// func stops watching.
func hangUpOnSignal(cmd *exec.Cmd, id uint32, sigs <-chan os.Signal) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "salloc: %s: hanging up the command and relinquishing job allocation %d\n", sig, id)
			_ = cmd.Process.Signal(syscall.SIGHUP)
		}
		select {
		case <-done:
		case <-time.After(commandKillWait):
			_ = cmd.Process.Kill()
		}
	}()
	return func() { close(done) }
}

// revokePoll is how often salloc -K asks whether its allocation still runs.
const revokePoll = 5 * time.Second

// watchRevoked calls revoked once job id is no longer running (polling
// the server), until stop is called.
func watchRevoked(ctx context.Context, c *client.Client, id uint32, revoked func()) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(revokePoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			j, err := c.Job(ctx, id)
			if err == nil && j.State() != "RUNNING" && j.State() != "COMPLETING" {
				revoked()
				return
			}
		}
	}()
	return cancel
}

// commandStatus is the status of a command that ended with err: its exit
// code, or 128+N for signal N.
func commandStatus(err error) int {
	if err == nil {
		return 0
	}
	var x *exec.ExitError
	if !errors.As(err, &x) {
		fmt.Fprintf(os.Stderr, "salloc: error: %v\n", err)
		return 1
	}
	if st, ok := x.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		return 128 + int(st.Signal())
	}
	return x.ExitCode()
}
