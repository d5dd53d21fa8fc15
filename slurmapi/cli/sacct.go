package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/report"
	"github.com/sluicehq/sluice/slurmapi/client"
)

func init() {
	register(Command{Name: "sacct", Summary: "show recorded jobs from the accounting ledger (like Slurm's sacct)", Run: func(args []string) error {
		return runSacct(args, os.Stdout, time.Now())
	}, Flags: flagsOf(sacctFlags)})
}

// layoutFlags are the output flags sacct, sshare and sreport share.
type layoutFlags struct {
	parsable, parsable2, noHeader, asJSON, asCSV bool
}

func (l *layoutFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&l.parsable, "p", false, "parsable: '|' after every field; also --parsable")
	fs.BoolVar(&l.parsable, "parsable", false, "parsable: '|' after every field")
	fs.BoolVar(&l.parsable2, "P", false, "parsable: '|' between fields; also --parsable2")
	fs.BoolVar(&l.parsable2, "parsable2", false, "parsable: '|' between fields")
	fs.BoolVar(&l.noHeader, "n", false, "no header; also --noheader")
	fs.BoolVar(&l.noHeader, "noheader", false, "no header")
	fs.BoolVar(&l.asJSON, "json", false, "print the report as JSON")
	fs.BoolVar(&l.asCSV, "csv", false, "print the report as CSV")
}

// write renders a report table (or value, for --json) as asked.
func (l *layoutFlags) write(w io.Writer, t report.Table, value any) error {
	f := report.FormatText
	switch {
	case l.asJSON && l.asCSV:
		return UsageError{"--json and --csv exclude each other"}
	case l.asJSON:
		f = report.FormatJSON
	case l.asCSV:
		f = report.FormatCSV
	}
	return report.Write(w, f, t, value, report.TextOptions{Parsable: l.parsable, Parsable2: l.parsable2, NoHeader: l.noHeader})
}

// parseCommand gives fs its usage text (flags listed after it), parses args and, unless
// positional arguments are allowed, refuses them; --help is not an error.
func parseCommand(fs *flag.FlagSet, usage string, args []string, positional bool) (help bool, err error) {
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage+"\n\nFlags:")
		fs.PrintDefaults()
	}
	if help, err := ParseFlags(fs, args); help || err != nil {
		return help, err
	}
	if !positional && fs.NArg() > 0 {
		return false, UsageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return false, nil
}

// parseSlurmTime reads sacct's and sreport's time forms, in UTC (the ledger's zone):
// YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY], HH:MM[:SS] (today), today, midnight, now and
// now[+-]N[seconds|minutes|hours|days|weeks].
func parseSlurmTime(s string, now time.Time) (time.Time, error) {
	now = now.UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	low := strings.ToLower(strings.TrimSpace(s))
	switch low {
	case "now":
		return now.Truncate(time.Second), nil
	case "today", "midnight":
		return today, nil
	case "yesterday":
		return today.AddDate(0, 0, -1), nil
	case "tomorrow":
		return today.AddDate(0, 0, 1), nil
	}
	if rest, ok := strings.CutPrefix(low, "now"); ok && rest != "" && (rest[0] == '-' || rest[0] == '+') {
		return relativeTime(rest, now, s)
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02", "01/02/06", "15:04:05", "15:04"} {
		t, err := time.ParseInLocation(layout, s, time.UTC)
		if err != nil {
			continue
		}
		if strings.HasPrefix(layout, "15") {
			return today.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second), nil
		}
		return t, nil
	}
	if t, err := time.ParseInLocation("01/02", s, time.UTC); err == nil {
		return time.Date(now.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), nil
	}
	return time.Time{}, fmt.Errorf("invalid time %q (want YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY], HH:MM[:SS], today, midnight or now[+-]N[units])", s)
}

// relativeTime reads "-N[units]" or "+N[units]" after "now".
func relativeTime(rest string, now time.Time, orig string) (time.Time, error) {
	sign := time.Duration(1)
	if rest[0] == '-' {
		sign = -1
	}
	rest = rest[1:]
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(rest[:i], 10, 32)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid time %q: no count after now%c", orig, map[time.Duration]byte{1: '+', -1: '-'}[sign])
	}
	units := map[string]time.Duration{"": time.Second, "s": time.Second, "sec": time.Second, "seconds": time.Second,
		"m": time.Minute, "min": time.Minute, "minutes": time.Minute, "h": time.Hour, "hour": time.Hour, "hours": time.Hour,
		"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour, "w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour}
	unit, ok := units[rest[i:]]
	if !ok {
		return time.Time{}, fmt.Errorf("invalid time %q: unknown unit %q (want seconds, minutes, hours, days or weeks)", orig, rest[i:])
	}
	return now.Add(sign * time.Duration(n) * unit).Truncate(time.Second), nil
}

func unixParam(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// sacctOpts are the values sacctFlags binds its flags to.
type sacctOpts struct {
	token, users, accounts, parts, states, names, jobs, start, end, format string
	allUsers, allocations, helpFormat                                      bool
	layout                                                                 layoutFlags
}

// sacctFlags builds sacct's options apart from runSacct, so docs/cli.md and its
// tests read the very flags the command parses.
func sacctFlags() (*flag.FlagSet, *sacctOpts) {
	fs := flag.NewFlagSet("sacct", flag.ContinueOnError)
	o := &sacctOpts{}
	fs.StringVar(&o.token, "token", "", "auth/jwt token (default $SLURM_JWT)")
	fs.StringVar(&o.users, "u", "", "only these users (comma-separated); also --user. Default: the token's user")
	fs.StringVar(&o.users, "user", "", "only these users")
	fs.BoolVar(&o.allUsers, "a", false, "every user's jobs; also --allusers")
	fs.BoolVar(&o.allUsers, "allusers", false, "every user's jobs")
	fs.StringVar(&o.accounts, "A", "", "only these accounts; also --accounts")
	fs.StringVar(&o.accounts, "accounts", "", "only these accounts")
	fs.StringVar(&o.parts, "r", "", "only these partitions; also --partition")
	fs.StringVar(&o.parts, "partition", "", "only these partitions")
	fs.StringVar(&o.states, "s", "", "only jobs now in these states (CD,F,R or completed,failed,...); also --state")
	fs.StringVar(&o.states, "state", "", "only jobs now in these states")
	fs.StringVar(&o.names, "name", "", "only jobs of these names (comma-separated); also --jobname")
	fs.StringVar(&o.names, "jobname", "", "only jobs of these names")
	fs.StringVar(&o.jobs, "j", "", "only these job ids; also --jobs")
	fs.StringVar(&o.jobs, "jobs", "", "only these job ids")
	fs.StringVar(&o.start, "S", "", "jobs that existed after this time (default: today 00:00 UTC unless -j); also --starttime")
	fs.StringVar(&o.start, "starttime", "", "start of the window")
	fs.StringVar(&o.end, "E", "", "jobs that existed before this time (default now); also --endtime")
	fs.StringVar(&o.end, "endtime", "", "end of the window")
	fs.StringVar(&o.format, "o", report.SacctDefaultFormat, "fields, e.g. JobID,State,AllocTRES%60; also --format")
	fs.StringVar(&o.format, "format", report.SacctDefaultFormat, "fields")
	fs.BoolVar(&o.allocations, "X", false, "allocations only, no steps (JOBID.batch, JOBID.0, ...); also --allocations")
	fs.BoolVar(&o.allocations, "allocations", false, "allocations only, no steps")
	fs.BoolVar(&o.helpFormat, "e", false, "list the fields --format accepts; also --helpformat")
	fs.BoolVar(&o.helpFormat, "helpformat", false, "list the fields --format accepts")
	o.layout.register(fs)
	return fs, o
}

func runSacct(args []string, stdout io.Writer, now time.Time) error {
	fs, o := sacctFlags()
	const usage = "Usage: sluice sacct [flags]\n\nShows jobs recorded in the accounting ledger, Slurm-submitted and Kubernetes-submitted alike.\nTimes are UTC."
	if help, err := parseCommand(fs, usage, args, false); help || err != nil {
		return err
	}
	if o.helpFormat {
		var names []string
		for _, c := range report.SacctColumns() {
			names = append(names, c.Name)
		}
		_, err := fmt.Fprintln(stdout, strings.Join(names, " "))
		return err
	}
	if _, err := report.SacctTable(nil, o.format, now); err != nil {
		return UsageError{err.Error()}
	}
	c, err := client.FromEnv(o.token)
	if err != nil {
		return err
	}
	q := url.Values{}
	for name, v := range map[string]string{"accounts": o.accounts, "partitions": o.parts, "states": o.states, "ids": o.jobs} {
		if v != "" {
			q.Set(name, v)
		}
	}
	switch {
	case o.users != "":
		q.Set("users", o.users)
	case !o.allUsers && c.TokenUser() != "":
		q.Set("users", c.TokenUser())
	}
	from, to := o.start, o.end
	if from == "" && o.jobs == "" {
		from = "today"
	}
	for name, v := range map[string]string{"start": from, "end": to} {
		if v == "" {
			continue
		}
		t, err := parseSlurmTime(v, now)
		if err != nil {
			return UsageError{fmt.Sprintf("--%stime: %v", name, err)}
		}
		q.Set(name, unixParam(t))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.LedgerJobs(ctx, q)
	if err != nil {
		return err
	}
	if o.names != "" {
		want := splitList(o.names)
		res.Jobs = slices.DeleteFunc(res.Jobs, func(j accounting.Job) bool { return !slices.Contains(want, j.Name) })
	}
	if o.allocations {
		for i := range res.Jobs {
			res.Jobs[i].Steps = nil
		}
	} else if o.jobs != "" {
		liveSteps(ctx, c, res.Jobs)
	}
	t, err := report.SacctTable(res.Jobs, o.format, now)
	if err != nil {
		return UsageError{err.Error()}
	}
	return o.layout.write(stdout, t, map[string]any{"jobs": res.Jobs})
}

// liveSteps gives the few running jobs sacct -j names their steps as the
// server knows them now (their batch host's word: RUNNING steps with
// their start), as Slurm's sacct shows steps while they run; the ledger
// has them only once the job has ended. A job whose steps cannot be
// read keeps the ledger's.
func liveSteps(ctx context.Context, c *client.Client, jobs []accounting.Job) {
	var running []int
	for i := range jobs {
		if jobs[i].State == accounting.StateRunning {
			running = append(running, i)
		}
	}
	if len(running) > 8 {
		return
	}
	for _, i := range running {
		if steps, err := c.JobSteps(ctx, uint32(jobs[i].JobID)); err == nil {
			jobs[i].Steps = steps
		}
	}
}
