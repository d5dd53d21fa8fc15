package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func init() {
	register(command{name: "scancel", summary: "cancel jobs (like Slurm's scancel)", run: runScancel})
}

func runScancel(args []string) error {
	fs := flag.NewFlagSet("scancel", flag.ContinueOnError)
	token := fs.String("token", "", "auth/jwt token (default $SLURM_JWT)")
	signal := fs.String("s", "", "signal to send instead of cancelling (e.g. SIGUSR1); also --signal")
	fs.StringVar(signal, "signal", "", "signal to send instead of cancelling")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice scancel [flags] JOBID[_TASK|.STEP] ...\n\nFlags:")
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{"no job id given"}
	}
	var ids []string
	for _, a := range fs.Args() {
		if !validJobRef(a) {
			return usageError{fmt.Sprintf("invalid job id %q", a)}
		}
		ids = append(ids, a)
	}
	c, ctx, cancel, err := connect(*token, time.Minute)
	if err != nil {
		return err
	}
	defer cancel()
	failed := 0
	for _, id := range ids {
		if err := c.CancelRef(ctx, id, *signal); err != nil {
			fmt.Fprintf(os.Stderr, "scancel: error: Kill job error on job id %s: %v\n", id, err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d jobs not cancelled", failed, len(ids))
	}
	return nil
}

// validJobRef accepts what scancel names: a job id, ARRAYID_TASK for
// one array task (cancelled alone, not the whole array), or JOBID.STEP
// for one step (its tasks only; the job goes on).
func validJobRef(ref string) bool {
	if job, step, isStep := strings.Cut(ref, "."); isStep {
		_, err := strconv.ParseUint(step, 10, 31)
		return err == nil && !strings.Contains(job, "_") && validJobRef(job)
	}
	base, task, isTask := strings.Cut(ref, "_")
	if _, err := strconv.ParseUint(base, 10, 32); err != nil {
		return false
	}
	if isTask {
		if _, err := strconv.ParseUint(task, 10, 31); err != nil {
			return false
		}
	}
	return true
}
