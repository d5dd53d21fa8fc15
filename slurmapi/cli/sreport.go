package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"
)

func init() {
	register(Command{Name: "sreport", Summary: "GPU-hours and utilization reports from the accounting ledger (like Slurm's sreport)", Run: func(args []string) error {
		return runSreport(args, os.Stdout, time.Now())
	}, Flags: flagsOf(sreportFlags)})
}

// sreportOptions maps sreport's KEY=value options (any case) to the ledger API's
// parameters.
var sreportOptions = map[string]string{"start": "start", "end": "end", "users": "users", "user": "users",
	"accounts": "accounts", "account": "accounts", "topcount": "topcount", "grouping": "grouping"}

// sreportOpts are the values sreportFlags binds its flags to.
type sreportOpts struct {
	token, units, tres string
	layout             layoutFlags
}

// sreportFlags builds sreport's options apart from runSreport, so docs/cli.md and its
// tests read the very flags the command parses.
func sreportFlags() (*flag.FlagSet, *sreportOpts) {
	fs := flag.NewFlagSet("sreport", flag.ContinueOnError)
	o := &sreportOpts{}
	fs.StringVar(&o.token, "token", "", "auth/jwt token (default $SLURM_JWT)")
	fs.StringVar(&o.units, "t", "", "time unit: seconds, minutes (default), hours or percent")
	fs.StringVar(&o.tres, "T", "", "TRES to report, e.g. gres/gpu (default), cpu, or ALL; also --tres")
	fs.StringVar(&o.tres, "tres", "", "TRES to report")
	o.layout.register(fs)
	return fs, o
}

func runSreport(args []string, stdout io.Writer, now time.Time) error {
	fs, o := sreportFlags()
	const usage = `Usage: sluice sreport [flags] <entity> <report> [Start=...] [End=...] [Users=...] [Accounts=...] [TopCount=N] [Grouping=1,2,4,8]

Reports:
  cluster Utilization                allocated / down / idle / reported GPU time
  cluster AccountUtilizationByUser   usage per account, then per user
  cluster UserUtilizationByAccount   usage per user and account
  user TopUsage                      the users who used the most
  job SizesByAccount                 usage binned by job size
  cluster NodeHealth                 per partition: node availability, faults, mean time
                                     between faults, validations passed/failed/preempted
  reservation Utilization            per reservation window: what its jobs used, what
                                     stayed idle
The window defaults to yesterday 00:00 to today 00:00 UTC. Example:
  sluice sreport -t hours -T gres/gpu cluster Utilization start=2026-11-01 end=2026-12-01`
	if help, err := parseCommand(fs, usage, args, true); help || err != nil {
		return err
	}
	var words []string
	q := url.Values{}
	for _, a := range fs.Args() {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			words = append(words, a)
			continue
		}
		name, known := sreportOptions[strings.ToLower(k)]
		if !known {
			return UsageError{fmt.Sprintf("unknown option %q (want Start, End, Users, Accounts, TopCount or Grouping)", k)}
		}
		q.Set(name, v)
	}
	if len(words) != 2 {
		return UsageError{"name one report: <entity> <report>, e.g. cluster Utilization"}
	}
	q.Set("report", words[0]+" "+words[1])
	for name, def := range map[string]string{"start": "yesterday", "end": "today"} {
		v := q.Get(name)
		if v == "" {
			v = def
		}
		t, err := parseSlurmTime(v, now)
		if err != nil {
			return UsageError{fmt.Sprintf("%s: %v", name, err)}
		}
		q.Set(name, unixParam(t))
	}
	if o.units != "" {
		q.Set("t", o.units)
	}
	if o.tres != "" {
		q.Set("tres", o.tres)
	}
	c, ctx, cancel, err := connect(o.token, time.Minute)
	if err != nil {
		return err
	}
	defer cancel()
	res, err := c.Sreport(ctx, q)
	if err != nil {
		return err
	}
	return o.layout.write(stdout, res.Table, json.RawMessage(res.Value))
}
