package accounting

import (
	"fmt"
	"strconv"
	"time"
)

// ParseTime reads a time as sacct and sreport take one: UNIX seconds, RFC 3339,
// or Slurm's YYYY-MM-DD[THH:MM[:SS]] in UTC.
func ParseTime(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("time %q: want UNIX seconds, RFC 3339 or YYYY-MM-DD[THH:MM[:SS]]", s)
}
