package cli

import (
	"flag"
	"regexp"
	"slices"
	"strings"
)

// How docs/cli.md reads a flag set: the flags bound to one value make one row, named
// as the user types them (-u, --user=USER), described by the usage that names the
// others.

// sluiceOwn marks the options Slurm's commands do not have, so a reader coming from
// Slurm knows them for Sluice's. Keyed by long name.
var sluiceOwn = map[string]string{
	"token": "Sluice's own option; Slurm's commands have none",
}

// optionRow is one option as a user reads it: every spelling bound to one value.
type optionRow struct {
	shorts, longs []string   // names, without dashes
	primary       *flag.Flag // the spelling whose usage describes the option
}

// alsoList is the "; also --x, --y" a short spelling's usage names its others by.
var alsoList = regexp.MustCompile(`; also (--?[\w-]+(?:, --?[\w-]+)*)`)

// also returns the names f's usage says are its other spellings.
func also(f *flag.Flag) []string {
	m := alsoList.FindStringSubmatch(f.Usage)
	if m == nil {
		return nil
	}
	var names []string
	for _, n := range strings.Split(m[1], ", ") {
		names = append(names, strings.TrimLeft(n, "-"))
	}
	return names
}

// optionRows groups fs's flags by the value they set (short and long spellings are
// two flags on one variable), in the order of their long names, as Slurm's man pages
// list them.
func optionRows(fs *flag.FlagSet) []optionRow {
	byValue := map[flag.Value]*optionRow{}
	var rows []*optionRow
	fs.VisitAll(func(f *flag.Flag) {
		r := byValue[f.Value]
		if r == nil {
			r = &optionRow{}
			byValue[f.Value] = r
			rows = append(rows, r)
		}
		if len(f.Name) == 1 {
			r.shorts = append(r.shorts, f.Name)
		} else {
			r.longs = append(r.longs, f.Name)
		}
		// The spelling whose usage names the others carries the full description.
		if r.primary == nil || also(f) != nil || (also(r.primary) == nil && len(f.Usage) > len(r.primary.Usage)) {
			r.primary = f
		}
	})
	out := make([]optionRow, len(rows))
	for i, r := range rows {
		order := append([]string{r.primary.Name}, also(r.primary)...)
		slices.SortStableFunc(r.longs, func(a, b string) int { return rank(order, a) - rank(order, b) })
		out[i] = *r
	}
	slices.SortStableFunc(out, func(a, b optionRow) int { return compareNames(a.key(), b.key()) })
	return out
}

// rank places a long name as the usage lists it: the described one, then its "also"s.
func rank(order []string, name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

func (r optionRow) key() string {
	if len(r.longs) > 0 {
		return r.longs[0]
	}
	return r.shorts[0]
}

// compareNames orders case-insensitively, lower case first on a tie (--format, --Format).
func compareNames(a, b string) int {
	if c := strings.Compare(strings.ToLower(a), strings.ToLower(b)); c != 0 {
		return c
	}
	return -strings.Compare(a, b)
}

func (r optionRow) isSwitch() bool { return isBool(r.primary) }

// arg is the value's placeholder: a `name` quoted in the usage (the flag package's
// convention), else the long name, else VALUE.
func (r optionRow) arg() string {
	if r.isSwitch() {
		return ""
	}
	if strings.Contains(r.primary.Usage, "`") {
		name, _ := flag.UnquoteUsage(r.primary)
		return strings.ToUpper(name)
	}
	if len(r.longs) > 0 {
		return strings.ToUpper(r.longs[0])
	}
	return "VALUE"
}

// spelling is the option as the user types it: -u, --user=USER.
func (r optionRow) spelling() string {
	var parts []string
	for _, s := range r.shorts {
		parts = append(parts, "-"+s)
	}
	for _, l := range r.longs {
		parts = append(parts, "--"+l)
	}
	s := strings.Join(parts, ", ")
	switch {
	case r.isSwitch():
	case len(r.longs) > 0:
		s += "=" + r.arg()
	default:
		s += " " + r.arg()
	}
	return s
}

// description is the usage without the "; also ..." that the row's spellings say.
func (r optionRow) description() string {
	d := r.primary.Usage
	if strings.Contains(d, "`") {
		_, d = flag.UnquoteUsage(r.primary)
	}
	d = alsoList.ReplaceAllString(d, "")
	for _, l := range r.longs {
		if own := sluiceOwn[l]; own != "" {
			d += ". " + own
		}
	}
	return d
}

// defaultValue is the flag's default where it is not the zero value.
func (r optionRow) defaultValue() string {
	switch d := r.primary.DefValue; d {
	case "", "false", "0":
		return ""
	default:
		return d
	}
}
