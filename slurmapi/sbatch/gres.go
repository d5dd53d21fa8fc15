package sbatch

import (
	"fmt"
	"strconv"
	"strings"
)

// GRES is one generic resource request: gpu, shard or mps, with an
// optional type ("h100") and a count (for mps, percent of one GPU).
type GRES struct {
	Name  string
	Type  string
	Count int64
}

// ParseGRES reads a comma-separated GRES list in the forms sbatch --gres
// and slurmrestd's tres_per_* fields use: "gpu", "gpu:2", "gpu:h100:2",
// "gres/gpu:2", "gres/gpu=2", "gres/gpu:h100=2", "shard:4", "mps:50".
// A bare name counts one.
func ParseGRES(s string) ([]GRES, error) {
	var out []GRES
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("empty entry in GRES list %q", s)
		}
		g, err := parseOneGRES(item)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

func parseOneGRES(item string) (GRES, error) {
	spec := strings.TrimPrefix(item, "gres/")
	spec = strings.TrimPrefix(spec, "gres:")
	g := GRES{Count: 1}
	// "name[:type]=count" (TRES form) or "name[:type][:count]" (sbatch).
	if name, count, ok := strings.Cut(spec, "="); ok {
		n, err := parseCount(count, item)
		if err != nil {
			return g, err
		}
		g.Count = n
		spec = name
	}
	parts := strings.Split(spec, ":")
	g.Name = parts[0]
	switch len(parts) {
	case 1:
	case 2:
		if n, err := strconv.ParseInt(parts[1], 10, 64); err == nil {
			g.Count = n
		} else {
			g.Type = parts[1]
		}
	case 3:
		g.Type = parts[1]
		n, err := parseCount(parts[2], item)
		if err != nil {
			return g, err
		}
		g.Count = n
	default:
		return g, fmt.Errorf("invalid GRES %q (want name[:type][:count])", item)
	}
	if !validName(g.Name) || (g.Type != "" && !validName(g.Type)) {
		return g, fmt.Errorf("invalid GRES %q: names are letters, digits, '-', '_' and '.'", item)
	}
	if g.Count < 1 {
		return g, fmt.Errorf("invalid GRES %q: count must be at least 1", item)
	}
	return g, nil
}

func parseCount(s, item string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("invalid GRES %q: count %q is not a number", item, s)
	}
	return n, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		ok := c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !ok {
			return false
		}
	}
	return true
}

// ParseGPUs reads --gpus, --gpus-per-node and --gpus-per-task values:
// "[type:]count".
func ParseGPUs(s string) (gpuType string, count int, err error) {
	typ, n, ok := strings.Cut(s, ":")
	if !ok {
		typ, n = "", s
	}
	c, err := strconv.ParseInt(strings.TrimSpace(n), 10, 32)
	if err != nil || c < 1 || (typ != "" && !validName(typ)) {
		return "", 0, fmt.Errorf("invalid GPU count %q (want [type:]count, count >= 1)", s)
	}
	return typ, int(c), nil
}
