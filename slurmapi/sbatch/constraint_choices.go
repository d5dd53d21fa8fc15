package sbatch

import (
	"fmt"
	"strings"
)

// ParseConstraintChoices reads --constraint with Slurm's matching or: "[r1|r2|r3]" means
// every node of the job has the same one of the options, so each option is a choice the
// job may run with, tried in the order written. Features outside the brackets joined by &
// hold in every choice ("ib&[r1|r2]"); an option may itself join features by &. Without
// brackets the whole constraint is one choice, as ParseConstraint reads it. Each choice is
// a list of alternatives (or), each a list of features that must all hold. Counts (a*2,
// "[a*2&b*4]"), parentheses, more than one bracketed group and | outside the brackets of
// a constraint that has them are refused: Sluice does not keep node counts per feature.
func ParseConstraintChoices(s string) ([][][]string, error) {
	open := strings.IndexByte(s, '[')
	if open < 0 {
		alts, err := ParseConstraint(s)
		if err != nil {
			return nil, err
		}
		return [][][]string{alts}, nil
	}
	if i := strings.IndexAny(s, "()"); i >= 0 {
		return nil, fmt.Errorf("constraint %q: parentheses are not supported (Sluice honours &, | and one [a|b] group)", s)
	}
	if strings.Contains(s, "*") {
		return nil, fmt.Errorf("constraint %q: node counts per feature (a*2) are not supported: Sluice does not keep a count of nodes per feature; ask for the features with & or [a|b]", s)
	}
	end := strings.IndexByte(s, ']')
	if end < open || strings.Count(s, "[") > 1 || strings.Count(s, "]") > 1 {
		return nil, fmt.Errorf("constraint %q: want one bracketed group [a|b], without nesting", s)
	}
	outside := s[:open] + s[end+1:]
	if strings.Contains(outside, "|") {
		return nil, fmt.Errorf("constraint %q: | outside the brackets of a matching or is not supported; join other features with &", s)
	}
	var common []string
	for _, f := range strings.FieldsFunc(outside, func(r rune) bool { return r == '&' || r == ',' }) {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !validFeature(f) {
			return nil, fmt.Errorf("constraint %q: %q is not a feature (letters, digits and ._-/ , or KEY=VALUE)", s, f)
		}
		common = append(common, f)
	}
	options, err := ParseConstraint(s[open+1 : end])
	if err != nil {
		return nil, fmt.Errorf("constraint %q: inside the brackets: %w", s, err)
	}
	out := make([][][]string, len(options))
	for i, opt := range options {
		out[i] = [][]string{append(append([]string(nil), common...), opt...)}
	}
	return out, nil
}
