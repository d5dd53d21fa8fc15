package slurmapi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Markers around the generated tables in docs/rest-compatibility.md.
const (
	CompatDocBegin = "<!-- BEGIN GENERATED: compat tables (slurmapi.CompatibilityMarkdown; go test ./slurmapi -run CompatDoc -update) -->"
	CompatDocEnd   = "<!-- END GENERATED: compat tables -->"
)

// CompatibilityMarkdown writes JobDescFields and sbatch's option tables
// as the Markdown tables of docs/rest-compatibility.md, so that the
// document says exactly what the code does.
func CompatibilityMarkdown() string {
	var b strings.Builder
	b.WriteString("### job_desc_msg fields (POST job/submit, and job/allocate without a script)\n\n")
	b.WriteString("| field | status | what Sluice does |\n|---|---|---|\n")
	fields := slices.Clone(JobDescFields)
	slices.SortFunc(fields, func(a, b FieldRule) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range fields {
		status := f.Support.String()
		if f.Support == Refused {
			status = fmt.Sprintf("refused (%d %s)", f.Errno, shortText[f.Errno])
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.Name, status, mdCell(f.Note))
	}
	b.WriteString("\n### sbatch options (`#SBATCH` directives and `sluice sbatch`)\n\n")
	b.WriteString("| option | status | what Sluice does |\n|---|---|---|\n")
	type row struct{ name, status, note string }
	var rows []row
	name := func(long string, short byte) string {
		if short != 0 {
			return fmt.Sprintf("`-%c`, `--%s`", short, long)
		}
		return "`--" + long + "`"
	}
	for _, o := range slices.Concat(sbatch.Table, sbatch.Ignored) {
		status := Honoured
		if !o.Honoured() {
			status = Warned
		}
		rows = append(rows, row{o.Long, status.String() + "|" + name(o.Long, o.Short), o.Help})
	}
	for _, r := range sbatch.Refused {
		rows = append(rows, row{r.Long, Refused.String() + "|" + name(r.Long, r.Short), r.Why})
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.name, b.name) })
	for _, r := range rows {
		status, display, _ := strings.Cut(r.status, "|")
		fmt.Fprintf(&b, "| %s | %s | %s |\n", display, status, mdCell(r.note))
	}
	return b.String()
}

// mdCell keeps a note inside one Markdown table cell.
func mdCell(s string) string {
	if s == "" {
		return ""
	}
	return strings.ReplaceAll(s, "|", `\|`)
}
