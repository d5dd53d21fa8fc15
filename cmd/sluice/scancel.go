package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
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
		fmt.Fprintln(fs.Output(), "Usage: sluice scancel [flags] JOBID[_TASK] ...\n\nFlags:")
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{"no job id given"}
	}
	var ids []uint32
	for _, a := range fs.Args() {
		base, _, _ := strings.Cut(a, "_") // an array task cancels through its array job's id here
		id, err := strconv.ParseUint(base, 10, 32)
		if err != nil {
			return usageError{fmt.Sprintf("invalid job id %q", a)}
		}
		ids = append(ids, uint32(id))
	}
	c, err := client.FromEnv(*token)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	failed := 0
	for _, id := range ids {
		if err := c.Cancel(ctx, id, *signal); err != nil {
			fmt.Fprintf(os.Stderr, "scancel: error: Kill job error on job id %d: %v\n", id, err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d jobs not cancelled", failed, len(ids))
	}
	return nil
}
