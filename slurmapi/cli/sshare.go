package cli

import (
	"context"
	"flag"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/report"
	"github.com/sluicehq/sluice/slurmapi/client"
)

func init() {
	register(Command{Name: "sshare", Summary: "show fair-share standing from the accounting ledger (like Slurm's sshare)", Run: func(args []string) error {
		return runSshare(args, os.Stdout)
	}, Flags: flagsOf(sshareFlags)})
}

// sshareOpts are the values sshareFlags binds its flags to.
type sshareOpts struct {
	token, accounts, users string
	all, long              bool // all: read only to be accepted, -a being the default here
	layout                 layoutFlags
}

// sshareFlags builds sshare's options apart from runSshare, so docs/cli.md and its
// tests read the very flags the command parses.
func sshareFlags() (*flag.FlagSet, *sshareOpts) {
	fs := flag.NewFlagSet("sshare", flag.ContinueOnError)
	o := &sshareOpts{}
	fs.StringVar(&o.token, "token", "", "auth/jwt token (default $SLURM_JWT)")
	fs.StringVar(&o.accounts, "A", "", "only these accounts (with their parents); also --accounts")
	fs.StringVar(&o.accounts, "accounts", "", "only these accounts")
	fs.StringVar(&o.users, "u", "", "only these users (with their accounts); also --users")
	fs.StringVar(&o.users, "users", "", "only these users")
	fs.BoolVar(&o.all, "a", false, "every user (the default here: the whole tree is shown unless -A or -u narrow it); also --all")
	fs.BoolVar(&o.all, "all", false, "every user")
	fs.BoolVar(&o.long, "l", false, "long: add NormUsage and LevelFS; also --long")
	fs.BoolVar(&o.long, "long", false, "long listing")
	o.layout.register(fs)
	return fs, o
}

func runSshare(args []string, stdout io.Writer) error {
	fs, o := sshareFlags()
	const usage = "Usage: sluice sshare [flags]\n\nShows the Fair Tree: each account's and user's shares, decayed usage and FairShare."
	if help, err := parseCommand(fs, usage, args, false); help || err != nil {
		return err
	}
	c, err := client.FromEnv(o.token)
	if err != nil {
		return err
	}
	q := url.Values{}
	if o.accounts != "" {
		q.Set("accounts", o.accounts)
	}
	if o.users != "" {
		q.Set("users", o.users)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.Shares(ctx, q)
	if err != nil {
		return err
	}
	rows := make([]accounting.ShareRow, len(res.Rows))
	for i, r := range res.Rows {
		rows[i] = r.Row()
	}
	return o.layout.write(stdout, report.SshareTable(rows, o.long), res)
}
