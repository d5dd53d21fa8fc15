package cli

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
	register(Command{Name: "scancel", Summary: "cancel jobs (like Slurm's scancel)", Run: runScancel, Flags: flagsOf(scancelFlags)})
}

// scancelOpts are the values scancelFlags binds its flags to.
type scancelOpts struct {
	token, signal, state string
	me                   bool
	filter               client.KillFilter
}

// scancelFlags builds scancel's options apart from runScancel, so docs/cli.md and its
// tests read the very flags the command parses.
func scancelFlags() (*flag.FlagSet, *scancelOpts) {
	fs := flag.NewFlagSet("scancel", flag.ContinueOnError)
	o := &scancelOpts{}
	fs.StringVar(&o.token, "token", "", "auth/jwt token (default $SLURM_JWT)")
	fs.StringVar(&o.signal, "s", "", "signal to send instead of cancelling (e.g. SIGUSR1); also --signal")
	fs.StringVar(&o.signal, "signal", "", "signal to send instead of cancelling")
	f := &o.filter
	fs.StringVar(&f.UserName, "u", "", "only jobs of this user; also --user")
	fs.StringVar(&f.UserName, "user", "", "only jobs of this user")
	fs.StringVar(&f.JobName, "n", "", "only jobs of this name; also --name, --jobname")
	fs.StringVar(&f.JobName, "name", "", "only jobs of this name")
	fs.StringVar(&f.JobName, "jobname", "", "only jobs of this name")
	fs.StringVar(&f.Partition, "p", "", "only jobs in this partition; also --partition")
	fs.StringVar(&f.Partition, "partition", "", "only jobs in this partition")
	fs.StringVar(&f.Account, "A", "", "only jobs of this account; also --account")
	fs.StringVar(&f.Account, "account", "", "only jobs of this account")
	fs.StringVar(&f.QOS, "q", "", "only jobs of this QOS; also --qos")
	fs.StringVar(&f.QOS, "qos", "", "only jobs of this QOS")
	fs.StringVar(&o.state, "t", "", "only jobs in this state (PENDING/PD, RUNNING/R, SUSPENDED/S); also --state")
	fs.StringVar(&o.state, "state", "", "only jobs in this state")
	fs.BoolVar(&o.me, "me", false, "only the token's user's jobs")
	return fs, o
}

func runScancel(args []string) error {
	fs, o := scancelFlags()
	f := &o.filter
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice scancel [flags] [JOBID[_TASK|.STEP] ...]\n\nCancels the jobs named, or every job of yours the filters select (scancel -u alice -t PENDING).\n\nFlags:")
		fs.PrintDefaults()
	}
	if help, err := ParseFlags(fs, args); help || err != nil {
		return err
	}
	if o.state != "" {
		st, ok := scancelStates[strings.ToUpper(o.state)]
		if !ok {
			return UsageError{fmt.Sprintf("invalid job state specified: %s", o.state)}
		}
		f.JobState = []string{st}
	}
	filtered := f.UserName != "" || f.JobName != "" || f.Partition != "" || f.Account != "" || f.QOS != "" || f.JobState != nil || o.me
	if fs.NArg() == 0 && !filtered {
		return UsageError{"No job identification provided"}
	}
	var ids []string
	for _, a := range fs.Args() {
		if !validJobRef(a) {
			return UsageError{fmt.Sprintf("invalid job id %q", a)}
		}
		ids = append(ids, a)
	}
	c, ctx, cancel, err := connect(o.token, time.Minute)
	if err != nil {
		return err
	}
	defer cancel()
	if filtered {
		if o.me {
			f.UserName = c.TokenUser()
		}
		f.Jobs, f.Signal = ids, o.signal
		return cancelMatching(ctx, c, *f)
	}
	failed := 0
	for _, id := range ids {
		if err := c.CancelRef(ctx, id, o.signal); err != nil {
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

// scancelStates are the states scancel -t takes, short or long, and their names.
var scancelStates = map[string]string{
	"PENDING": "PENDING", "PD": "PENDING", "RUNNING": "RUNNING", "R": "RUNNING", "SUSPENDED": "SUSPENDED", "S": "SUSPENDED",
}

// cancelMatching is scancel with filters: one DELETE jobs/, and a line for each job
// the server could not signal, as scancel prints them.
func cancelMatching(ctx context.Context, c *client.Client, f client.KillFilter) error {
	statuses, err := c.CancelMatching(ctx, f)
	if err != nil {
		return err
	}
	failed := 0
	for _, s := range statuses {
		if why := s.Failed(); why != "" {
			fmt.Fprintf(os.Stderr, "scancel: error: Kill job error on job id %d: %s\n", s.JobID.Number, why)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d jobs not cancelled", failed, len(statuses))
	}
	return nil
}
