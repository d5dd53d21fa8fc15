package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
)

func init() {
	register(Command{Name: "sprio", Summary: "show the priority of pending jobs and what makes it (like Slurm's sprio)", Run: func(args []string) error {
		return runSprio(args, os.Stdout)
	}, Flags: flagsOf(sprioFlags)})
}

// Slurm's sprio layouts, default and -l.
const (
	sprioDefaultFormat = "%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q"
	sprioLongFormat    = "%.15i %9r %.8u %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q %.6N"
)

var sprioHeaders = map[byte]string{
	'i': "JOBID", 'r': "PARTITION", 'u': "USER", 'Y': "PRIORITY", 'S': "SITE", 'A': "AGE",
	'F': "FAIRSHARE", 'J': "JOBSIZE", 'P': "PARTITION", 'Q': "QOS", 'N': "NICE",
}

// sprioRow is one pending job's priority and its parts. Sluice's
// priority is the operator-set job priority plus the QOS priority, less
// nice; age, job size and partition add nothing, and fair share orders
// queues before priority orders jobs inside one (see sshare), so those
// factors show 0, as in Slurm with their weights at 0.
type sprioRow struct {
	job              client.Job
	total, qos, nice int64
}

func sprioRows(jobs []client.Job, qosPriority map[string]int64) []sprioRow {
	var rows []sprioRow
	for _, j := range jobs {
		if j.State() != "PENDING" {
			continue
		}
		// The server gives the job's priority whole (an operator's + QOS's - nice); the
		// parts are shown beside it.
		p, _ := j.Priority.Value()
		r := sprioRow{job: j, qos: qosPriority[j.QOS], nice: j.Nice, total: p}
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(a, b sprioRow) int { return int(a.job.JobID) - int(b.job.JobID) })
	return rows
}

func sprioValue(r sprioRow, letter byte) string {
	switch letter {
	case 'i':
		return jobIDString(r.job)
	case 'r', 'P':
		if letter == 'r' {
			return r.job.Partition
		}
		return "0"
	case 'u':
		return r.job.UserName
	case 'Y':
		return strconv.FormatInt(r.total, 10)
	case 'Q':
		return strconv.FormatInt(r.qos, 10)
	case 'N':
		return strconv.FormatInt(r.nice, 10)
	}
	return "0"
}

// sprioOpts are the values sprioFlags binds its flags to.
type sprioOpts struct {
	token, users, jobs, parts string
	long, noHeader            bool
}

// sprioFlags builds sprio's options apart from runSprio, so docs/cli.md and its
// tests read the very flags the command parses.
func sprioFlags() (*flag.FlagSet, *sprioOpts) {
	fs := flag.NewFlagSet("sprio", flag.ContinueOnError)
	o := &sprioOpts{}
	fs.StringVar(&o.token, "token", "", "auth/jwt token (default $SLURM_JWT)")
	fs.BoolVar(&o.long, "l", false, "long layout (user, nice); also --long")
	fs.BoolVar(&o.long, "long", false, "long layout")
	fs.StringVar(&o.users, "u", "", "only these users; also --user")
	fs.StringVar(&o.users, "user", "", "only these users")
	fs.StringVar(&o.jobs, "j", "", "only these job ids; also --jobs")
	fs.StringVar(&o.jobs, "jobs", "", "only these job ids")
	fs.StringVar(&o.parts, "p", "", "only these partitions; also --partition")
	fs.StringVar(&o.parts, "partition", "", "only these partitions")
	fs.BoolVar(&o.noHeader, "h", false, "no header; also --noheader")
	fs.BoolVar(&o.noHeader, "noheader", false, "no header")
	return fs, o
}

func runSprio(args []string, stdout io.Writer) error {
	fs, o := sprioFlags()
	const usage = "Usage: sluice sprio [flags]\n\nShows each pending job's priority: the job's priority plus its QOS's, less nice. Between queues the scheduler orders by fair share first (sshare)."
	if help, err := parseCommand(fs, usage, args, false); help || err != nil {
		return err
	}
	c, ctx, cancel, err := connect(o.token, time.Minute)
	if err != nil {
		return err
	}
	defer cancel()
	list, err := c.Jobs(ctx)
	if err != nil {
		return err
	}
	qos, err := c.QOSList(ctx)
	if err != nil {
		return fmt.Errorf("reading the QOS priorities: %w", err)
	}
	qosPriority := map[string]int64{}
	for _, q := range qos {
		qosPriority[q.Name], _ = q.Priority.Value()
	}
	list = filterJobs(list, jobFilter{users: splitList(o.users), partitions: splitList(o.parts), ids: splitList(o.jobs), states: []string{"PENDING"}})
	rows := sprioRows(list, qosPriority)
	format := sprioDefaultFormat
	if o.long {
		format = sprioLongFormat
	}
	return writeTable(stdout, format, sprioHeaders, o.noHeader, len(rows), func(r int, l byte) string { return sprioValue(rows[r], l) })
}
