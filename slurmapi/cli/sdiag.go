package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
)

func init() {
	register(Command{Name: "sdiag", Summary: "show the scheduler's and the REST server's statistics (like Slurm's sdiag)", Run: func(args []string) error {
		return runSdiag(args, os.Stdout)
	}, Flags: flagsOf(sdiagFlags)})
}

// sdiagOpts are the values sdiagFlags binds its flags to.
type sdiagOpts struct {
	token string
}

// sdiagFlags builds sdiag's options apart from runSdiag, so docs/cli.md and its
// tests read the very flags the command parses.
func sdiagFlags() (*flag.FlagSet, *sdiagOpts) {
	fs := flag.NewFlagSet("sdiag", flag.ContinueOnError)
	o := &sdiagOpts{}
	fs.StringVar(&o.token, "token", "", "auth/jwt token (default $SLURM_JWT)")
	return fs, o
}

func runSdiag(args []string, stdout io.Writer) error {
	fs, o := sdiagFlags()
	const usage = "Usage: sluice sdiag [flags]\n\nShows job counts, the scheduler's cycle times and the REST server's requests by type and user, as sdiag does."
	if help, err := parseCommand(fs, usage, args, false); help || err != nil {
		return err
	}
	c, ctx, cancel, err := connect(o.token, time.Minute)
	if err != nil {
		return err
	}
	defer cancel()
	d, err := c.Diag(ctx)
	if err != nil {
		return err
	}
	writeSdiag(stdout, d)
	return nil
}

// sdiagZone is where sdiag's times are shown: local time, as ctime(3).
var sdiagZone = time.Local

// writeSdiag prints the statistics in sdiag's layout. Sections Sluice has
// nothing for (backfill, agent queues, slurmdbd) are left out.
func writeSdiag(w io.Writer, d client.Diag) {
	at := func(v client.NoVal) string {
		t, _ := v.Value()
		return fmt.Sprintf("%s (%d)", time.Unix(t, 0).In(sdiagZone).Format("Mon Jan 02 15:04:05 2006"), t)
	}
	now, _ := d.ReqTime.Value()
	since, _ := d.ReqTimeStart.Value()
	perMinute := int64(0)
	if minutes := (now - since) / 60; minutes > 0 {
		perMinute = d.CycleTotal / minutes
	}
	fmt.Fprintln(w, "*******************************************************")
	fmt.Fprintf(w, "sdiag output at %s\n", at(d.ReqTime))
	fmt.Fprintf(w, "Data since      %s\n", at(d.ReqTimeStart))
	fmt.Fprintln(w, "*******************************************************")
	fmt.Fprintf(w, "Server thread count:  %d\n\n", d.ServerThreadCount)
	fmt.Fprintf(w, "Jobs submitted: %d\nJobs started:   %d\nJobs completed: %d\nJobs canceled:  %d\nJobs failed:    %d\n\n",
		d.JobsSubmitted, d.JobsStarted, d.JobsCompleted, d.JobsCanceled, d.JobsFailed)
	fmt.Fprintf(w, "Job states ts:  %s\nJobs pending:   %d\nJobs running:   %d\n\n", at(d.ReqTime), d.JobsPending, d.JobsRunning)
	fmt.Fprintln(w, "Main schedule statistics (microseconds):")
	fmt.Fprintf(w, "\tLast cycle:   %d\n\tMax cycle:    %d\n\tTotal cycles: %d\n\tMean cycle:   %d\n\tCycles per minute: %d\n\tLast queue length: %d\n\n",
		d.CycleLast, d.CycleMax, d.CycleTotal, d.CycleMean, perMinute, d.JobsPending)
	fmt.Fprintln(w, "Remote Procedure Call statistics by message type")
	for _, r := range d.RPCsByType {
		avg, _ := r.AverageTime.Value()
		fmt.Fprintf(w, "\t%-40s(%5d) count:%-6d ave_time:%-6d total_time:%d\n", r.MessageType, r.TypeID, r.Count, avg, r.TotalTime)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Remote Procedure Call statistics by user")
	for _, r := range d.RPCsByUser {
		avg, _ := r.AverageTime.Value()
		fmt.Fprintf(w, "\t%-16s(%8d) count:%-6d ave_time:%-6d total_time:%d\n", r.User, r.UserID, r.Count, avg, r.TotalTime)
	}
}
