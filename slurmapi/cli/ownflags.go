package cli

import (
	"flag"
	"strings"
)

// sbatch, srun and salloc read most options with the shared option tables of
// slurmapi/sbatch and slurmapi/launch, which #SBATCH directives also use. The few
// options of the command itself (--token, --parsable, --pty, ...) live in a flag set
// like the other commands' options, so docs/cli.md lists them from the code, and
// ownFlag peels them off the command line before the shared table sees the rest.

// ownFlag reads args[i] if it is one of fs's options, spelled as these commands have
// always matched them: a switch exactly as -x or --name; a value as --name=V, or as
// --name V (-x V) when a next argument exists. It returns how many arguments it used;
// 0 when args[i] is none of fs's, for the shared table to read or report.
func ownFlag(fs *flag.FlagSet, args []string, i int) (int, error) {
	a := args[i]
	var f *flag.Flag
	fs.VisitAll(func(g *flag.Flag) {
		if s := spelling(g.Name); a == s || (!isBool(g) && strings.HasPrefix(a, s+"=")) {
			f = g
		}
	})
	if f == nil {
		return 0, nil
	}
	spelled, value, n := spelling(f.Name), "true", 1
	switch {
	case isBool(f):
	case a != spelled:
		value = a[len(spelled)+1:]
	case i+1 < len(args):
		value, n = args[i+1], 2
	default:
		return 0, nil // no value to take: the shared table reports it
	}
	if err := fs.Set(f.Name, value); err != nil {
		return 0, UsageError{err.Error()}
	}
	return n, nil
}

// spelling is how an own option is written: -x for one letter, --name for more.
func spelling(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
