package cli

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

// cliSamples are values an option's parser accepts where "alice" is not one, by
// long name.
var cliSamples = map[string]string{"jobid": "42"}

// parseAs parses args as command name does, without running it (no server is asked),
// and returns the flag set holding what it read. A word left over is an error: each
// case is one option alone, so a value not taken as the option's shows up.
func parseAs(name string, args []string) (*flag.FlagSet, error) {
	switch name {
	case "sbatch":
		fs, _ := sbatchFlags()
		rest, help, err := sbatchArgs(fs, args)
		if err == nil && (help || len(rest) > 0) {
			err = fmt.Errorf("left for the shared table: %q", rest)
		}
		return fs, err
	case "srun", "salloc":
		o, err := parseInteractive(name, args)
		if err != nil {
			return nil, err
		}
		if o.help || len(o.command) > 0 || len(o.stepArgs) > 0 {
			return nil, fmt.Errorf("not read as an own option: command %q, step options %q", o.command, o.stepArgs)
		}
		// parseInteractive's flag set is its own; one bound to a copy of what it read
		// shows the same values.
		fs, bound := interactiveFlags(name)
		*bound = *o
		return fs, nil
	}
	fs := commands[name].Flags()
	help, err := ParseFlags(fs, args)
	if err == nil && (help || fs.NArg() > 0) {
		err = fmt.Errorf("left as words: %q", fs.Args())
	}
	return fs, err
}

// getoptForms are the ways a user may write one option, as getopt_long reads them.
func getoptForms(r optionRow, value string) [][]string {
	var forms [][]string
	for _, s := range r.shorts {
		if r.isSwitch() {
			forms = append(forms, []string{"-" + s})
		} else {
			forms = append(forms, []string{"-" + s + value}, []string{"-" + s, value})
		}
	}
	for _, l := range r.longs {
		if r.isSwitch() {
			forms = append(forms, []string{"--" + l})
		} else {
			forms = append(forms, []string{"--" + l + "=" + value}, []string{"--" + l, value})
		}
	}
	return forms
}

// TestCLIDocOptionsParse: every option docs/cli.md lists is taken by its command's
// parser in each spelling and getopt form (-uVALUE, -u VALUE, --user=VALUE, --user
// VALUE) and sets the option's value.
func TestCLIDocOptionsParse(t *testing.T) {
	for _, name := range slurmCommandNames() {
		for _, r := range optionRows(commands[name].Flags()) {
			value, want := "alice", "true"
			if v, ok := cliSamples[r.key()]; ok {
				value = v
			}
			if !r.isSwitch() {
				want = value
			}
			for _, args := range getoptForms(r, value) {
				fs, err := parseAs(name, args)
				if err != nil {
					t.Errorf("%s %s: %v", name, strings.Join(args, " "), err)
					continue
				}
				if got := fs.Lookup(r.primary.Name).Value.String(); got != want {
					t.Errorf("%s %s: %s is %q, want %q", name, strings.Join(args, " "), r.primary.Name, got, want)
				}
			}
		}
	}
}

// TestOwnOptionsInHelp: sbatch's and srun's --help text is written by hand (their
// shared options come from the tables); it must still name each option of their own
// flag sets, so it does not fall behind docs/cli.md.
func TestOwnOptionsInHelp(t *testing.T) {
	help := map[string]func(w *strings.Builder){
		"sbatch": func(w *strings.Builder) { sbatchUsage(w) },
		"srun":   func(w *strings.Builder) { interactiveUsage(w, "srun") },
	}
	for name, write := range help {
		var b strings.Builder
		write(&b)
		for _, r := range optionRows(commands[name].Flags()) {
			for _, l := range r.longs {
				if !strings.Contains(b.String(), "--"+l) {
					t.Errorf("%s --help does not mention --%s", name, l)
				}
			}
		}
	}
}
