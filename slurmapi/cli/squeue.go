package cli

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
)

func init() {
	register(Command{Name: "squeue", Summary: "list pending and running jobs (like Slurm's squeue)", Run: runSqueue, Flags: flagsOf(squeueFlags)})
}

// Slurm's squeue layouts: the default, -l (--long) and --start, and its
// default sort (partition, state, then priority, highest first).
const (
	squeueDefaultFormat = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
	squeueLongFormat    = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
	squeueStartFormat   = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
	squeueDefaultSort   = "P,t,-p"
)

var squeueHeaders = map[byte]string{
	'i': "JOBID", 'A': "JOBID", 'P': "PARTITION", 'j': "NAME", 'u': "USER", 't': "ST", 'T': "STATE",
	'M': "TIME", 'l': "TIME_LIMIT", 'D': "NODES", 'R': "NODELIST(REASON)", 'N': "NODELIST",
	'r': "REASON", 'a': "ACCOUNT", 'q': "QOS", 'V': "SUBMIT_TIME", 'S': "START_TIME", 'Q': "PRIORITY",
	'p': "PRIORITY", 'Y': "SCHEDNODES", 'v': "RESERVATION",
}

// squeueFields are squeue -O's field names and the format letters they stand for.
var squeueFields = map[string]byte{
	"jobid": 'i', "jobarrayid": 'i', "name": 'j', "username": 'u', "state": 'T', "statecompact": 't',
	"partition": 'P', "timeused": 'M', "timelimit": 'l', "numnodes": 'D', "nodelist": 'N', "reason": 'r',
	"reasonlist": 'R', "account": 'a', "qos": 'q', "submittime": 'V', "starttime": 'S', "priority": 'Q',
	"prioritylong": 'Q', "schednodes": 'Y', "reservation": 'v',
}

// squeueValue is one job's value for one format letter at time now.
func squeueValue(j client.Job, letter byte, now time.Time) string {
	switch letter {
	case 'i', 'A':
		return jobIDString(j)
	case 'P':
		return j.Partition
	case 'j':
		return j.Name
	case 'u':
		return j.UserName
	case 't':
		return stateCode(j.ShownState())
	case 'T':
		return j.ShownState()
	case 'M':
		return slurmDuration(elapsed(j, now))
	case 'l':
		v, ok := j.TimeLimit.Value()
		if !ok {
			return "UNLIMITED" // squeue's word; sinfo says infinite
		}
		return slurmTimeLimit(v, ok)
	case 'D':
		v, _ := j.NodeCount.Value()
		return strconv.FormatInt(v, 10)
	case 'R':
		if j.State() == "PENDING" || j.Nodes == "" {
			reason := j.StateReason
			if reason == "" {
				reason = "None"
			}
			return "(" + reason + ")"
		}
		return j.Nodes
	case 'N':
		return j.Nodes
	case 'r':
		return j.StateReason
	case 'a':
		return j.Account
	case 'q':
		return j.QOS
	case 'V':
		return slurmTimestamp(j.SubmitTime)
	case 'S':
		return slurmTimestamp(j.StartTime)
	case 'Q':
		v, _ := j.Priority.Value()
		return strconv.FormatInt(v, 10)
	case 'p':
		// Slurm prints the priority normalized to [0, 1]; Sluice's
		// priority has no fixed maximum, so it is scaled by 2^32.
		v, _ := j.Priority.Value()
		return strconv.FormatFloat(float64(v)/(1<<32), 'f', 8, 64)
	case 'Y':
		return "(null)" // nodes are chosen when the job starts
	case 'v':
		return orNull(j.Reservation)
	}
	return ""
}

// sortJobs orders jobs as squeue -S does: comma-separated format letters,
// each ascending or, with '-', descending; "+" is ascending too.
func sortJobs(jobs []client.Job, spec string, now time.Time) error {
	type key struct {
		letter byte
		desc   bool
	}
	var keys []key
	for _, k := range strings.Split(spec, ",") {
		k = strings.TrimSpace(k)
		desc := strings.HasPrefix(k, "-")
		k = strings.TrimLeft(k, "+-")
		if len(k) != 1 || squeueHeaders[k[0]] == "" {
			return UsageError{fmt.Sprintf("invalid sort field %q (use format letters such as i, P, t, p, u, V)", k)}
		}
		keys = append(keys, key{k[0], desc})
	}
	numeric := func(j client.Job, letter byte) (int64, bool) {
		switch letter {
		case 'i', 'A':
			return int64(j.JobID), true
		case 'p', 'Q':
			v, _ := j.Priority.Value()
			return v, true
		case 'D':
			v, _ := j.NodeCount.Value()
			return v, true
		case 'V':
			v, _ := j.SubmitTime.Value()
			return v, true
		case 'S':
			v, _ := j.StartTime.Value()
			return v, true
		case 'M':
			return int64(elapsed(j, now)), true
		case 'l':
			v, _ := j.TimeLimit.Value()
			return v, true
		}
		return 0, false
	}
	slices.SortStableFunc(jobs, func(a, b client.Job) int {
		for _, k := range keys {
			var c int
			if x, ok := numeric(a, k.letter); ok {
				y, _ := numeric(b, k.letter)
				c = cmp.Compare(x, y)
			} else {
				c = strings.Compare(squeueValue(a, k.letter, now), squeueValue(b, k.letter, now))
			}
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	return nil
}

// elapsed is how long the job has run at now (until its end once it
// ended); 0 while pending.
func elapsed(j client.Job, now time.Time) time.Duration {
	start, ok := j.StartTime.Value()
	if !ok || start == 0 || j.State() == "PENDING" {
		return 0
	}
	end := now
	if e, ok := j.EndTime.Value(); ok && e > start && j.State() != "RUNNING" {
		end = time.Unix(e, 0)
	}
	return max(end.Sub(time.Unix(start, 0)), 0)
}

// jobIDString is the job id as squeue shows it: 123, an array task
// 123_4, or an array's record with the tasks not started yet 123_[4-15%3]
// (%3: at most three run at once).
func jobIDString(j client.Job) string {
	arr, isArray := j.ArrayJobID.Value()
	isArray = isArray && arr != 0
	if task, ok := j.ArrayTaskID.Value(); ok && isArray {
		return fmt.Sprintf("%d_%d", arr, task)
	}
	if isArray && j.ArrayTaskString != "" {
		tasks := j.ArrayTaskString
		if limit, ok := j.ArrayMaxTasks.Value(); ok && limit > 0 && !strings.Contains(tasks, "%") {
			tasks += fmt.Sprintf("%%%d", limit)
		}
		return fmt.Sprintf("%d_[%s]", arr, tasks)
	}
	return strconv.FormatUint(uint64(j.JobID), 10)
}

func slurmTimestamp(v client.NoVal) string {
	t, ok := v.Value()
	if !ok || t == 0 {
		return "N/A"
	}
	return time.Unix(t, 0).Format("2006-01-02T15:04:05")
}

// writeTable prints rows under a header in a Slurm --format layout.
func writeTable(w io.Writer, format string, headers map[byte]string, noHeader bool, rows int, value func(row int, letter byte) string) error {
	specs, tail, err := parseFormat(format)
	if err != nil {
		return err
	}
	for i := range specs {
		if specs[i].auto { // %#X: as wide as the widest value
			specs[i].width = 1
			for r := 0; r < rows; r++ {
				specs[i].width = max(specs[i].width, len(value(r, specs[i].letter)))
			}
		}
	}
	line := func(get func(letter byte) string) {
		var b strings.Builder
		for _, s := range specs {
			b.WriteString(s.literal)
			b.WriteString(field(get(s.letter), s.width, s.right))
		}
		b.WriteString(tail)
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	if !noHeader {
		line(func(l byte) string { return headers[l] })
	}
	for r := 0; r < rows; r++ {
		line(func(l byte) string { return value(r, l) })
	}
	return nil
}

// squeueOpts are the values squeueFlags binds its flags to.
type squeueOpts struct {
	token, users, accounts, parts, states, jobs, format, fields, sortSpec, resv string
	noHeader, asJSON, me, long, start, all                                      bool
}

// squeueFlags builds squeue's options apart from runSqueue, so docs/cli.md and its
// tests read the very flags the command parses.
func squeueFlags() (*flag.FlagSet, *squeueOpts) {
	fs := flag.NewFlagSet("squeue", flag.ContinueOnError)
	o := &squeueOpts{}
	fs.StringVar(&o.token, "token", "", "auth/jwt token (default $SLURM_JWT)")
	fs.StringVar(&o.users, "u", "", "only these users (comma-separated); also --user")
	fs.StringVar(&o.users, "user", "", "only these users (comma-separated)")
	fs.StringVar(&o.accounts, "A", "", "only these accounts; also --account")
	fs.StringVar(&o.accounts, "account", "", "only these accounts")
	fs.StringVar(&o.parts, "p", "", "only these partitions; also --partition")
	fs.StringVar(&o.parts, "partition", "", "only these partitions")
	fs.StringVar(&o.states, "t", "", "only these states (e.g. PD,R or pending,running); also --states")
	fs.StringVar(&o.states, "states", "", "only these states")
	fs.StringVar(&o.jobs, "j", "", "only these job ids; also --jobs")
	fs.StringVar(&o.jobs, "jobs", "", "only these job ids")
	fs.StringVar(&o.resv, "R", "", "only jobs in this reservation; also --reservation")
	fs.StringVar(&o.resv, "reservation", "", "only jobs in this reservation")
	fs.StringVar(&o.format, "o", squeueDefaultFormat, "output format, Slurm's %-letters; also --format")
	fs.StringVar(&o.format, "format", squeueDefaultFormat, "output format")
	fs.StringVar(&o.fields, "O", "", "output fields by name (jobid,name:30,username,state,...); also --Format")
	fs.StringVar(&o.fields, "Format", "", "output fields by name")
	fs.BoolVar(&o.noHeader, "h", false, "no header; also --noheader")
	fs.BoolVar(&o.noHeader, "noheader", false, "no header")
	fs.BoolVar(&o.asJSON, "json", false, "print the jobs as JSON (the REST API's v0.0.44 shape)")
	fs.BoolVar(&o.me, "me", false, "only the token's user's jobs")
	fs.BoolVar(&o.long, "l", false, "long layout (state in words, time limit) under the date; also --long")
	fs.BoolVar(&o.long, "long", false, "long layout")
	fs.StringVar(&o.sortSpec, "S", squeueDefaultSort, "sort by format letters, '-' for descending; also --sort")
	fs.StringVar(&o.sortSpec, "sort", squeueDefaultSort, "sort by format letters")
	fs.BoolVar(&o.start, "start", false, "pending jobs with their expected start (N/A: Sluice does not estimate)")
	fs.BoolVar(&o.all, "all", false, "include finished jobs still known to the cluster")
	return fs, o
}

func runSqueue(args []string) error {
	fs, o := squeueFlags()
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintln(out, "Usage: sluice squeue [flags]\n\nLists jobs, Slurm-submitted and Kubernetes-submitted alike.")
		io.WriteString(out, "Default format: "+squeueDefaultFormat+"\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if help, err := ParseFlags(fs, args); help || err != nil {
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
	userList := splitList(o.users)
	if o.me {
		userList = append(userList, c.TokenUser())
	}
	stateList := splitList(o.states)
	if o.start && len(stateList) == 0 {
		stateList = []string{"PENDING"}
	}
	list = filterJobs(list, jobFilter{users: userList, accounts: splitList(o.accounts),
		partitions: splitList(o.parts), states: stateList, ids: splitList(o.jobs), reservation: o.resv, all: o.all})
	now := time.Now()
	if err := sortJobs(list, o.sortSpec, now); err != nil {
		return err
	}
	if o.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"jobs": list})
	}
	layout := o.format
	switch {
	case o.format != squeueDefaultFormat:
	case o.fields != "":
		if layout, err = formatFromFields("squeue", o.fields, squeueFields); err != nil {
			return err
		}
	case o.start:
		layout = squeueStartFormat
	case o.long:
		layout = squeueLongFormat
	}
	if o.long && !o.noHeader {
		fmt.Println(now.Format("Mon Jan 02 15:04:05 2006")) // squeue -l dates its listing
	}
	return writeTable(os.Stdout, layout, squeueHeaders, o.noHeader, len(list), func(r int, l byte) string {
		return squeueValue(list[r], l, now)
	})
}

type jobFilter struct {
	users, accounts, partitions, states, ids []string
	reservation                              string // squeue -R: only its jobs
	all                                      bool
}

// filterJobs keeps what squeue shows: by default only jobs not yet finished.
func filterJobs(jobs []client.Job, f jobFilter) []client.Job {
	var out []client.Job
	for _, j := range jobs {
		state := j.ShownState()
		if len(f.states) > 0 {
			if !slices.ContainsFunc(f.states, func(s string) bool {
				s = strings.ToUpper(s)
				return s == state || s == stateCode(state) || s == "ALL"
			}) {
				continue
			}
		} else if !f.all && !activeState(state) {
			continue
		}
		if len(f.users) > 0 && !slices.Contains(f.users, j.UserName) ||
			len(f.accounts) > 0 && !slices.Contains(f.accounts, j.Account) ||
			len(f.partitions) > 0 && !slices.Contains(f.partitions, j.Partition) ||
			f.reservation != "" && j.Reservation != f.reservation ||
			len(f.ids) > 0 && !slices.Contains(f.ids, jobIDString(j)) && !slices.Contains(f.ids, strconv.FormatUint(uint64(j.JobID), 10)) {
			continue
		}
		out = append(out, j)
	}
	return out
}

// activeState is what squeue lists without --states: jobs not yet ended.
func activeState(s string) bool {
	switch s {
	case "PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "REQUEUED":
		return true
	}
	return false
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
