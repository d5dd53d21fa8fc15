// Package cli is Sluice's Slurm command line: sbatch, srun, salloc, squeue, sinfo,
// scontrol, scancel, sacct, sacctmgr, sshare, sreport, sprio and sdiag, with `sluice
// logs` beside them. Each is a client of the REST API (package client) that reads its
// options as Slurm's getopt_long does (getopt.go) and prints what Slurm's command prints.
// cmd/sluice runs them as subcommands (Commands) and reports their errors (Exit).
package cli

import (
	"flag"
	"sort"
)

// Command is one command of the CLI. Each lives in its own file and registers itself
// in init, so commands can be added without touching this file.
type Command struct {
	Name    string
	Summary string
	Run     func(args []string) error
	// Flags builds the command's options without running it, so docs/cli.md is
	// generated from the very flag set Run parses (cli_doc_test.go); nil: not
	// documented there (sluice logs).
	Flags func() *flag.FlagSet
}

// Version is the Sluice version salloc --version prints; cmd/sluice sets it from its
// build.
var Version = "dev"

var commands = map[string]Command{}

func register(c Command) {
	if _, dup := commands[c.Name]; dup {
		panic("sluice: subcommand registered twice: " + c.Name)
	}
	commands[c.Name] = c
}

// Commands are the CLI's commands, by name.
func Commands() []Command {
	out := make([]Command, 0, len(commands))
	for _, c := range commands {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// flagsOf adapts a command's xFlags constructor, which also returns the values its
// flags are bound to, to Command.Flags.
func flagsOf[T any](build func() (*flag.FlagSet, T)) func() *flag.FlagSet {
	return func() *flag.FlagSet {
		fs, _ := build()
		return fs
	}
}
