package sbatch

import (
	"fmt"
	"strconv"
	"strings"
)

// Dependency is one --dependency condition: a type and the jobs it names
// (none for singleton).
type Dependency struct {
	Type string // after, afterany, afterok, afternotok, aftercorr, singleton
	Jobs []uint32
}

// Dependencies is a parsed --dependency: all conditions must hold, or with
// Any (conditions separated by '?') one of them.
type Dependencies struct {
	List []Dependency
	Any  bool
}

var dependencyTypes = map[string]bool{
	"after": true, "afterany": true, "afterok": true, "afternotok": true,
	"aftercorr": true, "afterburstbuffer": true, "singleton": true,
}

// ParseDependency reads "afterok:12:13,afterany:14", "afternotok:5?afterok:6"
// or "singleton". Job ids may carry "+time" (after:12+5), which is kept
// out of the ids.
func ParseDependency(s string) (Dependencies, error) {
	var d Dependencies
	s = strings.TrimSpace(s)
	if s == "" {
		return d, fmt.Errorf("empty dependency")
	}
	sep := ","
	if strings.Contains(s, "?") {
		if strings.Contains(s, ",") {
			return d, fmt.Errorf("invalid dependency %q: mix of ',' (all) and '?' (any)", s)
		}
		sep, d.Any = "?", true
	}
	for _, cond := range strings.Split(s, sep) {
		fields := strings.Split(cond, ":")
		dep := Dependency{Type: strings.ToLower(fields[0])}
		if !dependencyTypes[dep.Type] {
			return d, fmt.Errorf("invalid dependency %q: unknown type %q", s, fields[0])
		}
		if dep.Type == "singleton" {
			if len(fields) > 1 {
				return d, fmt.Errorf("invalid dependency %q: singleton takes no job ids", s)
			}
		} else if len(fields) < 2 {
			return d, fmt.Errorf("invalid dependency %q: %s needs job ids", s, dep.Type)
		}
		for _, f := range fields[1:] {
			idText, _, _ := strings.Cut(f, "+")
			idText, _, _ = strings.Cut(idText, "_") // array task: 12_3 depends on job 12
			id, err := strconv.ParseUint(idText, 10, 32)
			if err != nil || id == 0 {
				return d, fmt.Errorf("invalid dependency %q: %q is not a job id", s, f)
			}
			dep.Jobs = append(dep.Jobs, uint32(id))
		}
		d.List = append(d.List, dep)
	}
	return d, nil
}
