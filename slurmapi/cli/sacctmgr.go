package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

func init() {
	register(Command{Name: "sacctmgr", Summary: "show, add, modify and delete accounts, users and QOS (like Slurm's sacctmgr)", Run: func(args []string) error {
		return runSacctmgr(args, os.Stdin, os.Stdout)
	}, Flags: flagsOf(sacctmgrFlags)})
}

// sacctmgrColumn is one column of a sacctmgr listing: its title, width
// (values are right-justified, and cut with '+' when longer, as sacctmgr
// does) and value.
type sacctmgrColumn[T any] struct {
	title string
	width int
	value func(T) string
}

// writeSacctmgr prints rows in sacctmgr's layout: a header, a line of
// dashes, then one line per row; parsable writes '|'-separated fields
// with no padding (-P).
func writeSacctmgr[T any](w io.Writer, cols []sacctmgrColumn[T], rows []T, noHeader, parsable bool) {
	line := func(cell func(c sacctmgrColumn[T]) string) {
		var b strings.Builder
		for i, c := range cols {
			v := cell(c)
			switch {
			case parsable && i > 0:
				b.WriteString("|" + v)
			case parsable:
				b.WriteString(v)
			default:
				if len(v) > c.width {
					v = v[:c.width-1] + "+"
				}
				fmt.Fprintf(&b, "%*s ", c.width, v)
			}
		}
		fmt.Fprintln(w, b.String())
	}
	if !noHeader {
		line(func(c sacctmgrColumn[T]) string { return c.title })
		if !parsable {
			line(func(c sacctmgrColumn[T]) string { return strings.Repeat("-", c.width) })
		}
	}
	for _, r := range rows {
		line(func(c sacctmgrColumn[T]) string { return c.value(r) })
	}
}

func blank[T any](title string, width int) sacctmgrColumn[T] {
	return sacctmgrColumn[T]{title, width, func(T) string { return "" }}
}

var accountColumns = []sacctmgrColumn[client.Account]{
	{"Account", 10, func(a client.Account) string { return a.Name }},
	{"Descr", 20, func(a client.Account) string { return a.Description }},
	{"Org", 20, func(a client.Account) string { return a.Organization }},
}

var userColumns = []sacctmgrColumn[client.User]{
	{"User", 10, func(u client.User) string { return u.Name }},
	{"Def Acct", 10, func(u client.User) string { return u.Default.Account }},
	{"Admin", 9, func(u client.User) string {
		if len(u.AdminLevel) == 0 {
			return "None"
		}
		return u.AdminLevel[0]
	}},
}

var assocColumns = []sacctmgrColumn[client.Association]{
	{"Cluster", 10, func(a client.Association) string { return a.Cluster }},
	{"Account", 10, func(a client.Association) string { return a.Account }},
	{"User", 10, func(a client.Association) string { return a.User }},
	{"Partition", 10, func(a client.Association) string { return a.Partition }},
	{"Share", 9, func(a client.Association) string { return strconv.FormatInt(max(a.SharesRaw, 1), 10) }},
	blank[client.Association]("Priority", 10), blank[client.Association]("GrpJobs", 7),
	blank[client.Association]("GrpTRES", 13), blank[client.Association]("GrpSubmit", 9),
	blank[client.Association]("GrpWall", 11), blank[client.Association]("GrpTRESMins", 13),
	blank[client.Association]("MaxJobs", 7), blank[client.Association]("MaxTRES", 13),
	blank[client.Association]("MaxTRESPerNode", 14),
	{"MaxSubmit", 9, func(a client.Association) string {
		if n, ok := a.Max.Jobs.Per.Submitted.Value(); ok {
			return strconv.FormatInt(n, 10)
		}
		return ""
	}},
	blank[client.Association]("MaxWall", 11), blank[client.Association]("MaxTRESMins", 13),
	{"QOS", 20, func(a client.Association) string { return strings.Join(a.QOS, ",") }},
	{"Def QOS", 9, func(a client.Association) string { return a.Default.QOS }},
	blank[client.Association]("GrpTRESRunMin", 13),
}

func qosNumber(v client.NoVal) string {
	if n, ok := v.Value(); ok {
		return strconv.FormatInt(n, 10)
	}
	return ""
}

var qosColumns = []sacctmgrColumn[client.QOS]{
	{"Name", 10, func(q client.QOS) string { return q.Name }},
	{"Priority", 10, func(q client.QOS) string {
		p, _ := q.Priority.Value()
		return strconv.FormatInt(p, 10)
	}},
	{"GraceTime", 10, func(client.QOS) string { return "00:00:00" }},
	blank[client.QOS]("Preempt", 10), blank[client.QOS]("PreemptExemptTime", 19),
	{"PreemptMode", 11, func(q client.QOS) string {
		if len(q.Preempt.Mode) == 0 || q.Preempt.Mode[0] == "DISABLED" {
			return "cluster"
		}
		return strings.ToLower(q.Preempt.Mode[0])
	}},
	blank[client.QOS]("Flags", 40), blank[client.QOS]("UsageThres", 10),
	{"UsageFactor", 11, func(q client.QOS) string {
		f := 1.0
		if q.UsageFactor.Set && !q.UsageFactor.Infinite {
			f = q.UsageFactor.Number
		}
		return strconv.FormatFloat(f, 'f', 6, 64)
	}},
	{"GrpTRES", 13, func(q client.QOS) string { return client.TRESString(q.Limits.Max.TRES.Total) }},
	blank[client.QOS]("GrpTRESMins", 13), blank[client.QOS]("GrpTRESRunMin", 13),
	blank[client.QOS]("GrpJobs", 7), blank[client.QOS]("GrpSubmit", 9), blank[client.QOS]("GrpWall", 11),
	blank[client.QOS]("MaxTRES", 13), blank[client.QOS]("MaxTRESPerNode", 14), blank[client.QOS]("MaxTRESMins", 13),
	{"MaxWall", 11, func(q client.QOS) string {
		if m, ok := q.Limits.Max.WallClock.Per.Job.Value(); ok {
			return sbatch.FormatTimeLimit(time.Duration(m) * time.Minute)
		}
		return ""
	}},
	{"MaxTRESPU", 13, func(q client.QOS) string { return client.TRESString(q.Limits.Max.TRES.Per.User) }},
	{"MaxJobsPU", 9, func(q client.QOS) string { return qosNumber(q.Limits.Max.Jobs.ActiveJobs.Per.User) }},
	blank[client.QOS]("MaxSubmitPU", 11), blank[client.QOS]("MaxTRESPA", 13), blank[client.QOS]("MaxJobsPA", 9),
	blank[client.QOS]("MaxSubmitPA", 11), blank[client.QOS]("MinTRES", 13),
}

// sacctmgrOpts are the values sacctmgrFlags binds its flags to.
type sacctmgrOpts struct {
	token                         string
	noHeader, parsable, immediate bool
}

// sacctmgrFlags builds sacctmgr's options apart from runSacctmgr, so docs/cli.md and its
// tests read the very flags the command parses.
func sacctmgrFlags() (*flag.FlagSet, *sacctmgrOpts) {
	fs := flag.NewFlagSet("sacctmgr", flag.ContinueOnError)
	o := &sacctmgrOpts{}
	fs.StringVar(&o.token, "token", "", "auth/jwt token (default $SLURM_JWT)")
	fs.BoolVar(&o.noHeader, "n", false, "no header; also --noheader")
	fs.BoolVar(&o.noHeader, "noheader", false, "no header")
	fs.BoolVar(&o.parsable, "P", false, "'|'-separated fields, no padding; also --parsable2")
	fs.BoolVar(&o.parsable, "parsable2", false, "'|'-separated fields")
	fs.BoolVar(&o.immediate, "i", false, "commit add/modify/delete without asking; also --immediate")
	fs.BoolVar(&o.immediate, "immediate", false, "commit without asking")
	return fs, o
}

func runSacctmgr(args []string, stdin io.Reader, stdout io.Writer) error {
	fs, o := sacctmgrFlags()
	const usage = `Usage: sluice sacctmgr [flags] show|list account|user|association|qos
       sluice sacctmgr [-i] add account NAME[,NAME] [Description=..] [Organization=..] [Parent=ACCOUNT]
       sluice sacctmgr [-i] add user NAME Account=ACCOUNT [DefaultAccount=ACCOUNT]
       sluice sacctmgr [-i] add qos NAME [Priority=N] [UsageFactor=F] [PreemptMode=requeue|cancel|off]
       sluice sacctmgr [-i] modify account [where] name=NAME set Parent=.. QOS=a,b DefaultQOS=..
       sluice sacctmgr [-i] modify qos [where] name=NAME set Priority=.. UsageFactor=.. PreemptMode=..
       sluice sacctmgr [-i] delete account|qos NAME[,NAME]

As Slurm's sacctmgr. Changes need an administrator's token (rest.admins) and, without -i,
a 'y' to the question that follows the summary of what would change. An account is a Queue
and a QOS a QOS object: what Sluice does not keep (limits other than these) is refused.`
	if help, err := parseCommand(fs, usage, args, true); help || err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) > 0 && rest[0] != "show" && rest[0] != "list" {
		ch, err := parseSacctmgrChange(rest)
		if err != nil {
			return err
		}
		c, ctx, cancel, err := connect(o.token, 2*time.Minute)
		if err != nil {
			return err
		}
		defer cancel()
		return runSacctmgrChange(ctx, c, ch, o.immediate, stdin, stdout)
	}
	if len(rest) < 2 {
		return UsageError{"usage: sacctmgr show account|user|association|qos"}
	}
	query, err := showFormat(rest[2:])
	if err != nil {
		return err
	}
	c, ctx, cancel, err := connect(o.token, time.Minute)
	if err != nil {
		return err
	}
	defer cancel()
	switch entity := strings.ToLower(rest[1]); {
	case strings.HasPrefix(entity, "acc"):
		return showEntity(ctx, stdout, c.Accounts, accountColumns, query, o.noHeader, o.parsable)
	case strings.HasPrefix(entity, "user"):
		return showEntity(ctx, stdout, c.Users, userColumns, query, o.noHeader, o.parsable)
	case strings.HasPrefix(entity, "assoc"):
		return showEntity(ctx, stdout, c.Associations, assocColumns, query, o.noHeader, o.parsable)
	case strings.HasPrefix(entity, "qos"):
		return showEntity(ctx, stdout, c.QOSList, qosColumns, query, o.noHeader, o.parsable)
	default:
		return UsageError{fmt.Sprintf("sacctmgr show: unknown entity %q (account, user, association, qos)", rest[1])}
	}
}
