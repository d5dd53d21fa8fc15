package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/slurmapi/launch"
)

func init() {
	register(command{name: "salloc", summary: "allocate a job and run a shell with it (like Slurm's salloc)", run: runSalloc})
}

// runSalloc allocates a job, runs the user's command (their shell by
// default) here with the job's variables, so `sluice srun` inside runs
// steps in the job, and releases the job with the command's status.
func runSalloc(args []string) error {
	o, err := parseInteractive("salloc", args)
	if err != nil || o.help {
		return err
	}
	if o.jobID != 0 {
		return usageError{"salloc makes a new allocation; --jobid belongs to srun"}
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
	a, err := allocateInterruptibly(ctx, c, job, "salloc")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "salloc: Granted job allocation %d\n", a.ID)
	argv := o.command
	if len(argv) == 0 {
		argv = []string{os.Getenv("SHELL")}
		if argv[0] == "" {
			argv[0] = "/bin/sh"
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), launch.AllocationEnv(a, c)...)
	if o.token != "" {
		cmd.Env = append(cmd.Env, "SLURM_JWT="+o.token)
	}
	// The shell handles the terminal's signals; salloc waits for it.
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTSTP)
	rc := 0
	if err := cmd.Run(); err != nil {
		var x *exec.ExitError
		if !errors.As(err, &x) {
			fmt.Fprintf(os.Stderr, "salloc: error: %v\n", err)
			rc = 1
		} else if st, ok := x.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			rc = 128 + int(st.Signal())
		} else {
			rc = x.ExitCode()
		}
	}
	fmt.Fprintf(os.Stderr, "salloc: Relinquishing job allocation %d\n", a.ID)
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer rcancel()
	if err := launch.Release(rctx, c, a.ID, rc); err != nil {
		// The job must not hold its GPUs after the shell: cancel it.
		fmt.Fprintf(os.Stderr, "salloc: error: release job %d: %v; cancelling it\n", a.ID, err)
		_ = c.Cancel(rctx, a.ID, "")
	}
	return exitWith(rc)
}
