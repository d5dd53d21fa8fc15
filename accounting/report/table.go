// Package report renders the ledger as Slurm's sacct, sshare and sreport do:
// as Slurm-like text (fixed-width columns, a dashes line, or '|'-separated
// with -p/-P, headers off with -n), as JSON and as CSV. Reports are pure
// functions of the store and a clock, so the REST layer, the CLI and the
// dashboard all show the same numbers.
package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Column is one output field: its Slurm name and width. A negative width
// left-aligns the values, as in Slurm's print_fields.
type Column struct {
	Name  string
	Width int
}

// Table is a report's rows, already formatted as strings.
type Table struct {
	Title   []string // sreport's banner lines; empty for sacct and sshare
	Columns []Column
	Rows    [][]string
}

// Format selects an output encoding.
type Format string

// Output encodings.
const (
	FormatText Format = "text"
	FormatJSON Format = "json"
	FormatCSV  Format = "csv"
)

// ParseFormat accepts text, json or csv ("" means text).
func ParseFormat(s string) (Format, error) {
	switch Format(strings.ToLower(s)) {
	case "", FormatText:
		return FormatText, nil
	case FormatJSON:
		return FormatJSON, nil
	case FormatCSV:
		return FormatCSV, nil
	}
	return "", fmt.Errorf("unknown output format %q (want text, json or csv)", s)
}

// TextOptions are sacct/sshare/sreport's layout flags.
type TextOptions struct {
	Parsable  bool // -p: '|' after every field
	Parsable2 bool // -P: '|' between fields
	NoHeader  bool // -n: no banner, header or dashes
}

// WriteText writes t the way Slurm's print_fields does.
func (t Table) WriteText(w io.Writer, o TextOptions) error {
	var b strings.Builder
	parsable := o.Parsable || o.Parsable2
	if !o.NoHeader {
		for _, line := range t.Title {
			b.WriteString(line)
			b.WriteByte('\n')
		}
		names := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			names[i] = c.Name
		}
		t.writeLine(&b, names, o, true)
		if !parsable {
			for _, c := range t.Columns {
				b.WriteString(strings.Repeat("-", abs(c.Width)))
				b.WriteByte(' ')
			}
			b.WriteByte('\n')
		}
	}
	for _, r := range t.Rows {
		t.writeLine(&b, r, o, false)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (t Table) writeLine(b *strings.Builder, cells []string, o TextOptions, header bool) {
	for i, c := range t.Columns {
		v := cells[i]
		switch {
		case o.Parsable2 && i == len(t.Columns)-1:
			b.WriteString(v)
		case o.Parsable || o.Parsable2:
			b.WriteString(v)
			b.WriteByte('|')
		default:
			b.WriteString(fit(v, c.Width, header))
			b.WriteByte(' ')
		}
	}
	b.WriteByte('\n')
}

// fit pads or cuts a value to a column. Slurm marks a cut value with '+'
// (a header is just cut), and a header is aligned like its column's values
// (print_fields_header prints it with the field's signed width).
func fit(v string, width int, header bool) string {
	n := abs(width)
	if len(v) > n {
		if header {
			return v[:n]
		}
		return v[:n-1] + "+"
	}
	if width < 0 {
		return v + strings.Repeat(" ", n-len(v))
	}
	return strings.Repeat(" ", n-len(v)) + v
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// WriteCSV writes a header row (unless noHeader) and the rows.
func (t Table) WriteCSV(w io.Writer, noHeader bool) error {
	cw := csv.NewWriter(w)
	if !noHeader {
		names := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			names[i] = c.Name
		}
		if err := cw.Write(names); err != nil {
			return err
		}
	}
	if err := cw.WriteAll(t.Rows); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// writeJSON writes v indented, the JSON form of every report.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Write renders a report in the chosen format: text and CSV from its table,
// JSON from its structured value.
func Write(w io.Writer, f Format, t Table, value any, o TextOptions) error {
	switch f {
	case FormatJSON:
		return writeJSON(w, value)
	case FormatCSV:
		return t.WriteCSV(w, o.NoHeader)
	}
	return t.WriteText(w, o)
}

// ParseFieldList parses a --format value ("JobID,JobName%30") against the
// columns a report knows (matched case-insensitively; a %N suffix sets the
// width, keeping the column's alignment).
func ParseFieldList(s string, known []Column) ([]Column, error) {
	var out []Column
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, width, hasWidth := strings.Cut(item, "%")
		col, ok := findColumn(known, name)
		if !ok {
			return nil, fmt.Errorf("invalid field requested: %q", name)
		}
		if hasWidth {
			var n int
			if _, err := fmt.Sscanf(width, "%d", &n); err != nil || n <= 0 {
				return nil, fmt.Errorf("field %s: width %q must be a positive number", name, width)
			}
			if col.Width < 0 {
				n = -n
			}
			col.Width = n
		}
		out = append(out, col)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty field list")
	}
	return out, nil
}

func findColumn(known []Column, name string) (Column, bool) {
	for _, c := range known {
		if strings.EqualFold(c.Name, name) {
			return c, true
		}
	}
	return Column{}, false
}
