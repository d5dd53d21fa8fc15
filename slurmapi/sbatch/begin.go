package sbatch

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseBegin reads an sbatch --begin time relative to now: "now[+N[units]]"
// (units seconds, minutes, hours, days, weeks; default seconds),
// "YYYY-MM-DD[THH:MM[:SS]]", "HH:MM[:SS]" (today, or tomorrow if past),
// and the words today, tomorrow, midnight, noon, fika (15:00) and
// teatime (16:00).
func ParseBegin(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	low := strings.ToLower(s)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	nextAt := func(h int) time.Time {
		t := day.Add(time.Duration(h) * time.Hour)
		if !t.After(now) {
			t = t.AddDate(0, 0, 1)
		}
		return t
	}
	switch low {
	case "now":
		return now, nil
	case "today":
		return day, nil
	case "tomorrow":
		return day.AddDate(0, 0, 1), nil
	case "midnight":
		return day.AddDate(0, 0, 1), nil
	case "noon":
		return nextAt(12), nil
	case "fika":
		return nextAt(15), nil
	case "teatime":
		return nextAt(16), nil
	}
	if rest, ok := strings.CutPrefix(low, "now+"); ok {
		return relative(rest, now, s)
	}
	if strings.Contains(s, "-") {
		for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
			if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
				return t, nil
			}
		}
		return time.Time{}, fmt.Errorf("invalid begin time %q (want YYYY-MM-DD[THH:MM[:SS]])", s)
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			at := day.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second)
			if !at.After(now) {
				at = at.AddDate(0, 0, 1)
			}
			return at, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid begin time %q", s)
}

func relative(rest string, now time.Time, orig string) (time.Time, error) {
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(rest[:i], 10, 32)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid begin time %q: no count after now+", orig)
	}
	unit := time.Second
	switch rest[i:] {
	case "", "s", "sec", "second", "seconds":
	case "m", "min", "minute", "minutes":
		unit = time.Minute
	case "h", "hour", "hours":
		unit = time.Hour
	case "d", "day", "days":
		unit = 24 * time.Hour
	case "w", "week", "weeks":
		unit = 7 * 24 * time.Hour
	default:
		return time.Time{}, fmt.Errorf("invalid begin time %q: unknown unit %q", orig, rest[i:])
	}
	if n > int64(math.MaxInt64/unit) { // a wrapped product would be a time in the past
		return time.Time{}, fmt.Errorf("invalid begin time %q: too far ahead", orig)
	}
	return now.Add(time.Duration(n) * unit), nil
}
