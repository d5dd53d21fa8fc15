package accounting

import (
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	want := time.Date(2026, 11, 5, 4, 30, 0, 0, time.UTC)
	for in, exp := range map[string]time.Time{
		"1793853000":                want,
		"2026-11-05T04:30:00Z":      want,
		"2026-11-05T05:30:00+01:00": want,
		"2026-11-05T04:30:00":       want,
		"2026-11-05T04:30":          want,
		"2026-11-05":                time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC),
	} {
		got, err := ParseTime(in)
		if err != nil || !got.Equal(exp) || got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) = %v, %v; want %v UTC", in, got, err, exp)
		}
	}
	for _, bad := range []string{"", "yesterday", "2026-13-01", "05/11/2026"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}
