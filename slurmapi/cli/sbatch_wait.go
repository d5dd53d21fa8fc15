package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
)

// waitForJob is sbatch -W: it returns once job id has ended, with the exit status
// sbatch then exits with, the job's (its script's exit code; 128+N for signal N; 1 for
// an end with neither, such as a cancel before it ran). Pipelines and CI chain on it.
// It polls as sbatch does, every second at first and at most every ten; a passing
// error of the server is retried, and Ctrl-C stops the waiting (the job goes on).
func waitForJob(c *client.Client, id uint32, log io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	interval := time.Second
	for {
		qctx, cancel := context.WithTimeout(ctx, time.Minute)
		j, err := c.Job(qctx, id)
		cancel()
		if err == nil {
			if done, rc := jobEnded(j); done {
				return rc
			}
		} else if client.IsNotFound(err) {
			fmt.Fprintf(log, "sbatch: error: job %d is no longer known: %v\n", id, err)
			return 1
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(log, "sbatch: error: stopped waiting for job %d; it goes on\n", id)
			return 1
		case <-time.After(interval):
		}
		interval = min(2*interval, 10*time.Second)
	}
}

// finalStates are the states a job does not leave.
var finalStates = []string{"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}

// jobEnded reports whether j has ended (and is no longer completing), and the exit
// status sbatch -W gives for it.
func jobEnded(j client.Job) (bool, int) {
	if !slices.Contains(finalStates, j.State()) || j.ShownState() == "COMPLETING" {
		return false, 0
	}
	if rc, ok := j.ExitCode.ReturnCode.Value(); ok && rc != 0 {
		return true, int(rc)
	}
	if sig, ok := j.ExitCode.Signal.ID.Value(); ok && sig != 0 {
		return true, 128 + int(sig)
	}
	if j.State() != "COMPLETED" {
		return true, 1
	}
	return true, 0
}
