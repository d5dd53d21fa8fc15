package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
)

func init() {
	register(Command{Name: "logs", Summary: "print a job's output, from the server (only a token needed)", Run: runLogs})
}

// logsFlags are `sluice logs`'s flags; they may come before or after the job id.
type logsFlags struct {
	fs     *flag.FlagSet
	token  *string
	follow *bool
	stderr *bool
	node   *int
	podLog *bool
}

func newLogsFlags() logsFlags {
	fs := flag.NewFlagSet("logs", flag.ContinueOnError)
	f := logsFlags{fs: fs, token: fs.String("token", "", "auth/jwt token (default $SLURM_JWT)")}
	f.follow = fs.Bool("f", false, "keep printing as the job writes, until it ends; also --follow")
	fs.BoolVar(f.follow, "follow", false, "keep printing as the job writes")
	f.stderr = fs.Bool("error", false, "print only the job's standard error (default: both streams, as in slurm-%j.out)")
	f.node = fs.Int("node", 0, "the task on this node of the job (SLURM_NODEID; 0 is the batch host)")
	f.podLog = fs.Bool("pod-log", false, "read the pod log even when the job's output file is on this machine")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice logs [flags] JOBID[_TASK]\n\n"+
			"Prints a job's output: its output file (--output, default slurm-%j.out) when this machine\n"+
			"sees it, as a login node that mounts the cluster's filesystems does; else the pod log of\n"+
			"the job's batch host, read by the server. A line on stderr says which.\n\nFlags:")
		fs.PrintDefaults()
	}
	return f
}

// parseLogsArgs reads the job id and the flags around it.
func parseLogsArgs(args []string) (f logsFlags, job string, help bool, err error) {
	f = newLogsFlags()
	if help, err = ParseFlags(f.fs, args); help || err != nil {
		return f, "", help, err
	}
	rest := f.fs.Args()
	if len(rest) == 0 {
		return f, "", false, UsageError{"no job id given"}
	}
	job = rest[0]
	if help, err = ParseFlags(f.fs, rest[1:]); help || err != nil {
		return f, "", help, err
	}
	if f.fs.NArg() > 0 {
		return f, "", false, UsageError{fmt.Sprintf("one job id at a time, got also %q", f.fs.Args())}
	}
	if *f.node < 0 {
		return f, "", false, UsageError{"--node must be 0 or more"}
	}
	return f, job, false, nil
}

func runLogs(args []string) error {
	f, job, help, err := parseLogsArgs(args)
	if help || err != nil {
		return err
	}
	c, err := client.FromEnv(*f.token)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if !*f.follow {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
	}
	opts := client.LogOptions{Follow: *f.follow, Node: *f.node}
	if *f.stderr {
		opts.Stream = "stderr"
	}
	if *f.node == 0 && !*f.podLog { // only the batch host writes the output files
		// Only one's own job's file: a path another user chose is not read from an
		// operator's machine (their output path could name the operator's files).
		if recs, err := c.JobRecords(ctx, job); err == nil && len(recs) == 1 && recs[0].UserName == c.TokenUser() {
			path, why := outputFileHere(recs[0], opts.Stream)
			if path != "" {
				fmt.Fprintf(os.Stderr, "sluice logs: job %s: %s\n", job, path)
				return printOutputFile(ctx, c, job, path, *f.follow, os.Stdout)
			}
			if why != "" {
				fmt.Fprintf(os.Stderr, "sluice logs: job %s: %s; its batch host's pod log follows\n", job, why)
			}
		}
	}
	body, err := c.JobLog(ctx, job, opts)
	if err != nil {
		return err
	}
	defer body.Close()
	if _, err := io.Copy(os.Stdout, body); err != nil && !errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("reading job %s's output: %w", job, err)
	}
	return nil
}
