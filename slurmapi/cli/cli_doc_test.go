package cli

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// docs/cli.md is generated from each Slurm command's flag set (Command.Flags), the
// very one its Run parses, so the reference cannot drift from the code;
// go test ./slurmapi/cli -run CLIDoc -update rewrites it.
const cliDoc = "../../docs/cli.md"

// sharedTables: sbatch, srun and salloc read most options with the shared tables that
// #SBATCH directives also use (slurmapi/sbatch, slurmapi/launch). Those tables have
// generated docs of their own, which say what Sluice does with each option; cli.md
// points there rather than repeat them (TestCLIDocCoversEveryCommand checks the links).
var sharedTables = map[string]struct{ text, doc, heading string }{
	"sbatch": {"Every other option is a job option, the same `#SBATCH` reads, listed with what Sluice does with each in",
		"rest-compatibility.md", "sbatch options (`#SBATCH` directives and `sluice sbatch`)"},
	"srun": {"The allocation options are [sbatch's](#sbatch); every option of Slurm's srun, with what Sluice does with it, is in",
		"srun.md", "srun"},
	"salloc": {"salloc's own options (`--no-shell`, `-K`, `-I`, `--bell`, ...) and the sbatch options it shares, with what Sluice does with each, are in",
		"srun.md", "salloc"},
}

// slurmCommandNames are the Slurm commands, in alphabetical order.
func slurmCommandNames() []string {
	var names []string
	for name := range slurmCommands {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// cliMarkdown is docs/cli.md as the code has it.
func cliMarkdown() string {
	var b strings.Builder
	b.WriteString(`# Command-line reference

<!-- Generated from the commands' flag sets (slurmapi/cli) by go test ./slurmapi/cli -run CLIDoc -update; do not edit. -->

The options of ` + "`sluice`" + `'s Slurm commands, read from the flag set each command parses. Run a
command as ` + "`sluice squeue ...`" + ` or through a symlink named after it (` + "`squeue ...`" + `). Options are
read as Slurm's getopt_long reads them: ` + "`-ualice`" + ` and ` + "`-u alice`" + `, ` + "`--user=alice`" + ` and
` + "`--user alice`" + `, bundled switches (` + "`-lh`" + `); [The command-line
tools](rest-compatibility.md#the-command-line-tools) says how their errors and exit statuses follow
Slurm's. Every command also takes ` + "`--help`" + `. A default is shown where there is one.

`)
	names := slurmCommandNames()
	for i, name := range names {
		sep := ", "
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s[%s](#%s)", sep, name, name)
	}
	b.WriteString(".\n")
	for _, name := range names {
		c := commands[name]
		fmt.Fprintf(&b, "\n## %s\n\n%s.\n\n", name, upperFirst(c.Summary))
		b.WriteString("| option | description | default |\n|---|---|---|\n")
		for _, r := range optionRows(c.Flags()) {
			def := r.defaultValue()
			if def != "" {
				def = "`" + cell(def) + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", cell(r.spelling()), cell(r.description()), def)
		}
		if t, ok := sharedTables[name]; ok {
			fmt.Fprintf(&b, "\n%s [%s](%s#%s).\n", t.text, t.heading, t.doc, anchor(t.heading))
		}
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// anchor is the id GitHub gives a heading: lower case, punctuation dropped, spaces
// turned to hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestCLIDocMatchesCode: docs/cli.md is what the commands' flag sets produce; -update
// rewrites it.
func TestCLIDocMatchesCode(t *testing.T) {
	want := cliMarkdown()
	got, err := os.ReadFile(cliDoc)
	if err == nil && string(got) == want {
		return
	}
	if *updateGolden {
		if err := os.WriteFile(cliDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%v (run go test ./slurmapi/cli -run CLIDoc -update to write it)", err)
	}
	t.Errorf("%s differs from the commands' flag sets; run go test ./slurmapi/cli -run CLIDoc -update", cliDoc)
}

// TestCLIDocCoversEveryCommand: each Slurm command has a flag set to document, and
// every link in docs/cli.md (to its own sections, to the shared tables' docs) leads to
// a heading.
func TestCLIDocCoversEveryCommand(t *testing.T) {
	for _, name := range slurmCommandNames() {
		if commands[name].Flags == nil {
			t.Errorf("%s has no flags in its command entry: docs/cli.md cannot list its options", name)
		}
	}
	doc := cliMarkdown()
	for _, m := range regexp.MustCompile(`\]\(([\w-]*\.md)?#([^)]+)\)`).FindAllStringSubmatch(doc, -1) {
		text := doc
		if m[1] != "" {
			raw, err := os.ReadFile("../../docs/" + m[1])
			if err != nil {
				t.Fatal(err)
			}
			text = string(raw)
		}
		if !slices.Contains(headingAnchors(text), m[2]) {
			t.Errorf("docs/cli.md links to %s#%s, which has no such heading", m[1], m[2])
		}
	}
}

// headingAnchors are the anchors of a markdown text's headings.
func headingAnchors(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			out = append(out, anchor(h))
		}
	}
	return out
}

// TestAlsoNamesTheSameValue: a usage's "; also --x" names spellings bound to the same
// variable, and each row's other spellings are named, so the paired rows say what the
// parser does (an alias bound to a variable of its own would show as a row apart).
func TestAlsoNamesTheSameValue(t *testing.T) {
	for _, name := range slurmCommandNames() {
		for _, r := range optionRows(commands[name].Flags()) {
			others := slices.DeleteFunc(slices.Concat(r.shorts, r.longs), func(n string) bool { return n == r.primary.Name })
			said := also(r.primary)
			slices.Sort(others)
			slices.Sort(said)
			if !slices.Equal(others, said) {
				t.Errorf("%s %s: usage names %q as its other spellings, the flag set binds %q", name, r.spelling(), said, others)
			}
		}
	}
}
