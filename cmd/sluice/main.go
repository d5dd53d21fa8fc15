// Command sluice is the one Sluice binary: the server, the node agent, the
// local rig (`sluice dev`) and the Slurm-style CLI. Invoked through a symlink
// named after a subcommand (sbatch, squeue, ...) it runs that subcommand.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/sluicehq/sluice/slurmapi/cli"
)

// command is one subcommand. Each of Sluice's own lives in its own file and registers
// itself in init; the Slurm commands and sluice logs come from package cli.
type command struct {
	name    string
	summary string
	run     func(args []string) error
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("sluice: subcommand registered twice: " + c.name)
	}
	commands[c.name] = c
}

func init() {
	for _, c := range cli.Commands() {
		register(command{name: c.Name, summary: c.Summary, run: c.Run})
	}
}

func main() {
	os.Exit(runMain(os.Args, os.Stdout, os.Stderr))
}

func runMain(argv []string, stdout, stderr io.Writer) int {
	name, args := pickCommand(argv)
	if name == "" || name == "help" || name == "-h" || name == "--help" {
		printUsage(stdout)
		return 0
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "sluice: unknown command %q\n\n", name)
		printUsage(stderr)
		return 2
	}
	err := c.run(args)
	switch {
	case err == nil:
		return 0
	case cli.IsSlurm(name):
		return cli.Exit(stderr, name, err)
	}
	fmt.Fprintf(stderr, "sluice %s: %v\n", name, err)
	if _, ok := err.(cli.UsageError); ok {
		fmt.Fprintf(stderr, "Run 'sluice %s --help' for usage.\n", name)
		return 2
	}
	return 1
}

// pickCommand honours a symlink named after a subcommand (`squeue` ->
// `sluice squeue`) and otherwise takes the first argument.
func pickCommand(argv []string) (string, []string) {
	if len(argv) == 0 {
		return "", nil
	}
	base := filepath.Base(argv[0])
	if _, ok := commands[base]; ok && base != "sluice" {
		return base, argv[1:]
	}
	if len(argv) < 2 {
		return "", nil
	}
	return argv[1], argv[2:]
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Sluice: Slurm-style GPU queues on Kubernetes.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: sluice <command> [flags]   (or a symlink named after the command)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	width := 0
	for n := range commands {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'sluice <command> --help' for a command's flags.")
}
