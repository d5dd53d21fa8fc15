package launch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// The generated sections of docs/srun.md: srun's and salloc's option
// tables, made from srunTable and sbatch.Salloc (TestSrunOptionsDoc
// checks them; -update rewrites them).
const (
	srunDocBegin   = "<!-- srun-options:begin: generated from slurmapi/launch/srun_table.go by go test ./slurmapi/launch -run TestSrunOptionsDoc -update -->"
	srunDocEnd     = "<!-- srun-options:end -->"
	sallocDocBegin = "<!-- salloc-options:begin: generated from slurmapi/sbatch/salloc.go by go test ./slurmapi/launch -run TestSrunOptionsDoc -update -->"
	sallocDocEnd   = "<!-- salloc-options:end -->"
)

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func ruleName(s slurmapi.Support) string {
	return [...]string{"honoured", "warned", "refused"}[s]
}

// srunOptionsMarkdown is srun's option table as docs/srun.md shows it.
func srunOptionsMarkdown() string {
	rows := slices.Clone(srunTable)
	slices.SortFunc(rows, func(a, b srunOpt) int { return strings.Compare(a.long, b.long) })
	var n [3]int
	var b strings.Builder
	b.WriteString("| option | Sluice | what Sluice does |\n|---|---|---|\n")
	for _, o := range rows {
		n[o.support]++
		name := "`" + optionName(o) + "`"
		switch o.since {
		case "newer":
			name += " (newer Slurm)"
		case "pyxis":
			name += " (pyxis)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", mdCell(name), ruleName(o.support), mdCell(o.note))
	}
	return fmt.Sprintf("%d options: %d honoured, %d accepted with a warning, %d refused.\n\n", len(rows), n[0], n[1], n[2]) + b.String()
}

// sallocOptionsMarkdown is salloc's option table as docs/srun.md shows it.
func sallocOptionsMarkdown() string {
	rows := slices.Clone(sbatch.Salloc)
	slices.SortFunc(rows, func(a, b sbatch.SallocOption) int { return strings.Compare(a.Long, b.Long) })
	var n [3]int
	var b strings.Builder
	b.WriteString("| option | Sluice | what Sluice does |\n|---|---|---|\n")
	for _, r := range rows {
		rule, arg, short, note, _ := sbatch.SallocRule(r.Long)
		n[rule]++
		name := "--" + r.Long
		switch arg {
		case sbatch.RequiredArg:
			name += "=VALUE"
		case sbatch.OptionalArg:
			name += "[=VALUE]"
		}
		if short != 0 {
			name = "-" + string(short) + ", " + name
		}
		if r.AsSbatch {
			note = "as sbatch: " + note
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", mdCell("`"+name+"`"), ruleName(slurmapi.Support(rule)), mdCell(note))
	}
	return fmt.Sprintf("%d options: %d honoured, %d accepted with a warning, %d refused.\n\n", len(rows), n[0], n[1], n[2]) + b.String()
}
