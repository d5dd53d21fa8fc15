package cli

import (
	"errors"
	"flag"
)

// ParseFlags parses a command's flags as getopt_long would read them (getoptArgs).
// help is true after -h/--help (the flag set has printed its usage); a bad flag is a
// UsageError. A bad flag prints only the error and a pointer to --help (as getopt
// does), not the whole usage: that is for --help.
func ParseFlags(fs *flag.FlagSet, args []string) (help bool, err error) {
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
		return false, UsageError{err.Error()}
	}
	return false, nil
}

// UsageError is a bad invocation: reported with a pointer to --help (Exit; exit 2 for
// Sluice's own commands).
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }
