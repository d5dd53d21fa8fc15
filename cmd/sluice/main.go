// Command sluice is the one Sluice binary: the server, the node agent, the
// local rig (`sluice dev`) and the Slurm-style CLI. Invoked through a symlink
// named after a subcommand (sbatch, squeue, ...) it runs that subcommand.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// command is one subcommand. Each lives in its own file and registers itself
// in init, so subcommands can be added without touching this file.
type command struct {
	name    string
	summary string
	run     func(args []string) error
	// flags builds the command's options without running it, so docs/cli.md is
	// generated from the very flag set run parses (cli_doc_test.go); nil: not
	// documented there (Sluice's own commands).
	flags func() *flag.FlagSet
}

// flagsOf adapts a command's xFlags constructor, which also returns the values its
// flags are bound to, to command.flags.
func flagsOf[T any](build func() (*flag.FlagSet, T)) func() *flag.FlagSet {
	return func() *flag.FlagSet {
		fs, _ := build()
		return fs
	}
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("sluice: subcommand registered twice: " + c.name)
	}
	commands[c.name] = c
}

// parseFlags parses a subcommand's flags. help is true after -h/--help
// (the flag set has printed its usage); a bad flag is a usageError.
// A bad flag prints only the error and a pointer to --help (as getopt does), not the
// whole usage: that is for --help.
func parseFlags(fs *flag.FlagSet, args []string) (help bool, err error) {
	usage := fs.Usage
	if usage == nil {
		usage = func() { fs.PrintDefaults() }
	}
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	if err := fs.Parse(getoptArgs(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return true, nil
		}
		return false, usageError{err.Error()}
	}
	return false, nil
}

// usageError is a bad invocation: printed with a pointer to --help, exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

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
	case slurmCommands[name]:
		return slurmExit(stderr, name, err)
	}
	fmt.Fprintf(stderr, "sluice %s: %v\n", name, err)
	if _, ok := err.(usageError); ok {
		fmt.Fprintf(stderr, "Run 'sluice %s --help' for usage.\n", name)
		return 2
	}
	return 1
}

// slurmCommands answer errors as Slurm's commands do (slurmExit).
var slurmCommands = map[string]bool{
	"sbatch": true, "srun": true, "salloc": true, "squeue": true, "sinfo": true, "scontrol": true, "scancel": true,
	"sacct": true, "sacctmgr": true, "sshare": true, "sreport": true, "sprio": true, "sdiag": true,
}

// slurmExit prints err as Slurm's commands do, each line "NAME: error: ...", and
// returns their exit status: 255 for a bad invocation (they exit(SLURM_ERROR) after
// getopt, and scripts test for it) with getopt's wording and "Try ... --help", 1 for
// the rest.
func slurmExit(stderr io.Writer, name string, err error) int {
	if u, ok := err.(usageError); ok {
		fmt.Fprintf(stderr, "%s: %s\nTry \"%s --help\" for more information\n", name, getoptWording(u.msg), name)
		return 255
	}
	for _, line := range strings.Split(strings.TrimRight(err.Error(), "\n"), "\n") {
		fmt.Fprintf(stderr, "%s: error: %s\n", name, line)
	}
	return 1
}

// getoptWording turns Go's flag errors into getopt's ("invalid option -- 'Z'",
// "unrecognized option '--colour'", "option requires an argument -- 'u'"), which is what
// users of Slurm's commands search for; other messages pass unchanged.
func getoptWording(msg string) string {
	if opt, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		if name := strings.TrimLeft(opt, "-"); len(name) == 1 {
			return fmt.Sprintf("invalid option -- '%s'", name)
		}
		return fmt.Sprintf("unrecognized option '--%s'", strings.TrimLeft(opt, "-"))
	}
	if opt, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		if name := strings.TrimLeft(opt, "-"); len(name) == 1 {
			return fmt.Sprintf("option requires an argument -- '%s'", name)
		}
		return fmt.Sprintf("option '--%s' requires an argument", strings.TrimLeft(opt, "-"))
	}
	return msg
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
