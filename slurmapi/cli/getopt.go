package cli

import (
	"flag"
	"strings"
)

// getoptArgs rewrites a command line written for Slurm's commands, which parse with
// getopt_long, into what Go's flag package reads: a short option's value attached to
// it (-ualice, -tPD) is split off, bundled short switches (-lh) are taken apart, and
// options after positional words (scontrol show job -o 42) are moved before them, as
// getopt permutes. Anything it does not recognise is left as it was, for fs.Parse to
// report. "--" ends the options, as in getopt.
func getoptArgs(fs *flag.FlagSet, args []string) []string {
	var opts, words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			words = append(words, args[i+1:]...)
			return append(append(opts, "--"), words...)
		}
		if len(a) < 2 || a[0] != '-' || isNumber(a) {
			words = append(words, a)
			continue
		}
		parts, needsValue := splitOption(fs, a)
		opts = append(opts, parts...)
		if needsValue && i+1 < len(args) {
			i++
			opts = append(opts, args[i]) // --user alice, -u alice, -lu alice
		}
	}
	return append(opts, words...)
}

// splitOption reads one token that starts with a dash. A flag by its name (-u, --user,
// --user=alice, Go's -json) stays whole; otherwise a single-dash token is taken apart
// as getopt reads short options: -ualice is -u alice when -u takes a value, -lh is
// -l -h when both are switches, -lualice is -l -u alice. needsValue says the last
// option takes its value from the next argument. A token it cannot read comes back
// whole, for fs.Parse to report.
func splitOption(fs *flag.FlagSet, a string) (parts []string, needsValue bool) {
	name, _, attached := strings.Cut(strings.TrimLeft(a, "-"), "=")
	if f := fs.Lookup(name); f != nil {
		return []string{a}, !attached && !isBool(f)
	}
	if strings.HasPrefix(a, "--") {
		return []string{a}, false
	}
	for j := 1; j < len(a); j++ {
		letter := a[j : j+1]
		f := fs.Lookup(letter)
		switch {
		case f == nil:
			return []string{a}, false
		case !isBool(f):
			parts = append(parts, "-"+letter)
			if j+1 < len(a) {
				return append(parts, a[j+1:]), false
			}
			return parts, true
		}
		parts = append(parts, "-"+letter)
	}
	return parts, false
}

// isBool reports whether f is a switch (takes no value).
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// isNumber reports whether a dash-led token is a negative number, a value rather
// than an option.
func isNumber(a string) bool {
	for _, r := range a[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
