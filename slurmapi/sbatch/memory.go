package sbatch

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseMemory reads an sbatch memory size ("4096", "16G", "512M", "1T",
// "100K") in MiB; a bare number is MiB, as in sbatch. Sizes that are not a
// whole number of MiB round up.
func ParseMemory(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty memory size")
	}
	mult := int64(1)
	div := int64(1)
	switch s[len(s)-1] {
	case 'K', 'k':
		div = 1024
	case 'M', 'm':
	case 'G', 'g':
		mult = 1024
	case 'T', 't':
		mult = 1024 * 1024
	default:
		if c := s[len(s)-1]; c < '0' || c > '9' {
			return 0, fmt.Errorf("invalid memory size %q (units K, M, G, T)", s)
		}
		s += "M"
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n < 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("invalid memory size %q", s)
	}
	return (n*mult + div - 1) / div, nil
}
