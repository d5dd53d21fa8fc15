package main

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
	register(command{name: "sshare", summary: "show fair-share standing from the accounting ledger (like Slurm's sshare)", run: func(args []string) error {
		return runSshare(args, os.Stdout)
	}})
}

func runSshare(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sshare", flag.ContinueOnError)
	token := fs.String("token", "", "auth/jwt token (default $SLURM_JWT)")
	accounts := fs.String("A", "", "only these accounts (with their parents); also --accounts")
	fs.StringVar(accounts, "accounts", "", "only these accounts")
	users := fs.String("u", "", "only these users (with their accounts); also --users")
	fs.StringVar(users, "users", "", "only these users")
	fs.Bool("a", false, "every user (the default here: the whole tree is shown unless -A or -u narrow it); also --all")
	fs.Bool("all", false, "every user")
	long := fs.Bool("l", false, "long: add NormUsage and LevelFS; also --long")
	fs.BoolVar(long, "long", false, "long listing")
	var layout layoutFlags
	layout.register(fs)
	const usage = "Usage: sluice sshare [flags]\n\nShows the Fair Tree: each account's and user's shares, decayed usage and FairShare."
	if help, err := parseCommand(fs, usage, args, false); help || err != nil {
		return err
	}
	c, err := client.FromEnv(*token)
	if err != nil {
		return err
	}
	q := url.Values{}
	if *accounts != "" {
		q.Set("accounts", *accounts)
	}
	if *users != "" {
		q.Set("users", *users)
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
	return layout.write(stdout, report.SshareTable(rows, *long), res)
}
