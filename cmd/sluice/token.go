package main

import (
	"flag"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/internal/serverconfig"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/cli"
)

func init() {
	register(command{name: "token", summary: "mint a JWT for the REST API (like `scontrol token`)", run: runToken})
}

// jwtKeyPath is where the server keeps its HS256 key unless configured otherwise.
func jwtKeyPath(stateDir string) string { return filepath.Join(stateDir, "jwt.key") }

func runToken(args []string) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	userName := fs.String("user", currentUser(), "user the token is for (the JWT's sun claim)")
	lifespan := fs.Int("lifespan", 1800, "seconds the token stays valid")
	stateDir := fs.String("state-dir", serverconfig.Default().StateDir, "the server's state directory (holds jwt.key)")
	keyFile := fs.String("key-file", "", "HS256 key file (default STATE-DIR/jwt.key)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice token [--user U] [--lifespan S]\n\nPrints SLURM_JWT=<token>, signed with the server's key, for\nX-SLURM-USER-TOKEN or `export SLURM_JWT=...` before sluice sbatch/squeue.\n\nFlags:")
		fs.PrintDefaults()
	}
	if help, err := cli.ParseFlags(fs, args); help || err != nil {
		return err
	}
	if *lifespan <= 0 {
		return cli.UsageError{Msg: "--lifespan must be a positive number of seconds"}
	}
	if *userName == "" {
		return cli.UsageError{Msg: "--user is required (no current user found)"}
	}
	path := *keyFile
	if path == "" {
		path = jwtKeyPath(*stateDir)
	}
	key, err := slurmapi.LoadOrCreateKey(path)
	if err != nil {
		return err
	}
	tok, err := slurmapi.MintToken(key, *userName, time.Duration(*lifespan)*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "SLURM_JWT=%s\n", tok)
	return nil
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}
