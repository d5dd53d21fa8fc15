package sbatch

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseConstraint reads --constraint: features joined by & (and) and | (or), & binding
// tighter, as Slurm reads them; a comma is an and too (slurmrestd's constraints field). It returns the alternatives, each a list of features that
// must all hold. A feature is a name (a node with label sluice.dev/feature.NAME has it) or
// KEY=VALUE (a node with that label). Slurm's matching or ([a|b]) is read by
// ParseConstraintChoices; counts (a*2) and parentheses are refused: Sluice cannot keep them.
func ParseConstraint(s string) ([][]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty constraint")
	}
	if i := strings.IndexAny(s, "[]()*"); i >= 0 {
		return nil, fmt.Errorf("constraint %q: %q is not supported (Sluice honours features joined by & and |)", s, s[i])
	}
	var out [][]string
	for _, alt := range strings.Split(s, "|") {
		var all []string
		for _, f := range strings.FieldsFunc(alt, func(r rune) bool { return r == '&' || r == ',' }) {
			f = strings.TrimSpace(f)
			if !validFeature(f) {
				return nil, fmt.Errorf("constraint %q: %q is not a feature (letters, digits and ._-/ , or KEY=VALUE)", s, f)
			}
			all = append(all, f)
		}
		if len(all) == 0 {
			return nil, fmt.Errorf("constraint %q: an alternative has no feature", s)
		}
		out = append(out, all)
	}
	return out, nil
}

func validFeature(f string) bool {
	if f == "" || strings.Count(f, "=") > 1 || strings.HasPrefix(f, "=") {
		return false
	}
	for _, c := range f {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-/=", c)
		if !ok {
			return false
		}
	}
	return true
}

// maxNodeList bounds a node list's expansion, and maxNodeName each name in it (a
// Kubernetes node name's limit): a list costs at most about a MiB, whatever its text.
const (
	maxNodeList = 4096
	maxNodeName = 253
)

// ParseNodeList expands a Slurm node list (--nodelist, --exclude): names separated by
// commas, each with optional bracketed ranges, e.g. "gpu-[01-04,07],login1".
func ParseNodeList(s string) ([]string, error) {
	var out []string
	for _, item := range splitOutsideBrackets(s) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		var err error
		if out, err = expandHost(out, item); err != nil {
			return nil, fmt.Errorf("node list %s: %w", quoteShort(s), err)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty node list")
	}
	return out, nil
}

func splitOutsideBrackets(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// expandHost appends to out the names of one item (a name with at most one bracketed
// range list). Each name is checked before it is made, and the list's cap before each
// is added: a short text with many wide ranges costs no more than its refusal.
func expandHost(out []string, item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "]/ ") {
			return nil, fmt.Errorf("%s is not a node name", quoteShort(item))
		}
		return appendName(out, item)
	}
	end := strings.IndexByte(item, ']')
	if end < open || strings.ContainsAny(item[end+1:], "[]") {
		return nil, fmt.Errorf("%s: unbalanced or nested brackets", quoteShort(item))
	}
	prefix, suffix := item[:open], item[end+1:]
	for _, r := range strings.Split(item[open+1:end], ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || len(lo) > maxNodeName {
			return nil, fmt.Errorf("%s: bad range %s", quoteShort(item), quoteShort(r))
		}
		if b-a >= maxNodeList-len(out) {
			return nil, fmt.Errorf("names more than %d nodes", maxNodeList)
		}
		for n := a; n <= b; n++ {
			var buf [20]byte
			num := strconv.AppendInt(buf[:0], int64(n), 10)
			pad := max(len(lo)-len(num), 0) // keep zero padding: gpu-[01-04]
			if size := len(prefix) + pad + len(num) + len(suffix); size > maxNodeName {
				return nil, fmt.Errorf("node name %s... is longer than %d characters", quoteShort(prefix), maxNodeName)
			}
			var name strings.Builder // one allocation a name
			name.Grow(len(prefix) + pad + len(num) + len(suffix))
			name.WriteString(prefix)
			for range pad {
				name.WriteByte('0')
			}
			name.Write(num)
			name.WriteString(suffix)
			var err error
			if out, err = appendName(out, name.String()); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// appendName adds one expanded name, within the list's bounds.
func appendName(out []string, name string) ([]string, error) {
	switch {
	case len(name) > maxNodeName:
		return nil, fmt.Errorf("node name %s is longer than %d characters", quoteShort(name), maxNodeName)
	case len(out) >= maxNodeList:
		return nil, fmt.Errorf("names more than %d nodes", maxNodeList)
	}
	return append(out, name), nil
}

// quoteShort quotes s for an error, cut to its start: an error never echoes a whole
// megabyte of input.
func quoteShort(s string) string {
	const keep = 64
	if len(s) <= keep {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:keep]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// ParseSwitches reads --switches=COUNT[@MAX_TIME]: the most leaf switches (domains of the
// partition's innermost topology level) the job may span, and how long it waits for them
// (a Slurm time, as --time; 0: without end). After that it runs wherever it fits, as
// Slurm drops the switch count once the job has waited MAX_TIME.
func ParseSwitches(s string) (int, time.Duration, error) {
	count, wait, timed := strings.Cut(s, "@")
	n, err := strconv.Atoi(strings.TrimSpace(count))
	if err != nil || n < 1 {
		return 0, 0, fmt.Errorf("%q: want COUNT[@MAX_TIME] with COUNT >= 1", s)
	}
	if !timed {
		return n, 0, nil
	}
	d, err := ParseTimeLimit(strings.TrimSpace(wait))
	if err != nil || d <= 0 {
		return 0, 0, fmt.Errorf("%q: MAX_TIME %q is not a time such as 10:00 or 1-0", s, wait)
	}
	return n, d, nil
}
