package sbatch

import (
	"reflect"
	"testing"
	"time"
)

func TestParseTimeLimit(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"30", 30 * time.Minute, false},
		{"30:00", 30 * time.Minute, false},
		{"1:30", 2 * time.Minute, false}, // minutes:seconds, seconds round up
		{"2:00:00", 2 * time.Hour, false},
		{"1-0", 24 * time.Hour, false},
		{"1-2", 26 * time.Hour, false},
		{"1-2:30", 26*time.Hour + 30*time.Minute, false},
		{"1-2:30:01", 26*time.Hour + 31*time.Minute, false},
		{"INFINITE", Unlimited, false},
		{"unlimited", Unlimited, false},
		{"", 0, true},
		{"1:2:3:4", 0, true},
		{"abc", 0, true},
		{"-5", 0, true},
		{"1-", 0, true},
		{"99999999999", 0, true},
	}
	for _, tc := range cases {
		got, err := ParseTimeLimit(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("%q: got %v (%v), want %v bad=%v", tc.in, got, err, tc.want, tc.bad)
		}
	}
	if s := FormatTimeLimit(26*time.Hour + 5*time.Minute); s != "1-02:05:00" {
		t.Errorf("FormatTimeLimit = %s", s)
	}
}

func TestParseBegin(t *testing.T) {
	now := time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{"now", now, false},
		{"now+60", now.Add(time.Minute), false},
		{"now+2hours", now.Add(2 * time.Hour), false},
		{"now+1day", now.Add(24 * time.Hour), false},
		{"2026-04-01", time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), false},
		{"2026-04-01T08:30", time.Date(2026, 4, 1, 8, 30, 0, 0, time.UTC), false},
		{"16:00", time.Date(2026, 3, 10, 16, 0, 0, 0, time.UTC), false},
		{"09:00", time.Date(2026, 3, 11, 9, 0, 0, 0, time.UTC), false}, // past today: tomorrow
		{"teatime", time.Date(2026, 3, 10, 16, 0, 0, 0, time.UTC), false},
		{"noon", time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC), false},
		{"tomorrow", time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC), false},
		{"now+3fortnights", time.Time{}, true},
		{"2026-13-01", time.Time{}, true},
		{"later", time.Time{}, true},
		{"now+2147483647weeks", time.Time{}, true}, // would wrap to a time in the past
	}
	for _, tc := range cases {
		got, err := ParseBegin(tc.in, now)
		if (err != nil) != tc.bad || (!tc.bad && !got.Equal(tc.want)) {
			t.Errorf("%q: got %v (%v), want %v bad=%v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestParseGRES(t *testing.T) {
	cases := []struct {
		in   string
		want []GRES
		bad  bool
	}{
		{"gpu", []GRES{{"gpu", "", 1}}, false},
		{"gpu:4", []GRES{{"gpu", "", 4}}, false},
		{"gpu:h100:8", []GRES{{"gpu", "h100", 8}}, false},
		{"gpu:h100", []GRES{{"gpu", "h100", 1}}, false},
		{"gres/gpu:2", []GRES{{"gpu", "", 2}}, false},
		{"gres/gpu=2", []GRES{{"gpu", "", 2}}, false},
		{"gres/gpu:a100=3", []GRES{{"gpu", "a100", 3}}, false},
		{"gres:gpu:1", []GRES{{"gpu", "", 1}}, false},
		{"shard:4,mps:50", []GRES{{"shard", "", 4}, {"mps", "", 50}}, false},
		{"gpu:0", nil, true},
		{"gpu:a:b:c", nil, true},
		{"gpu,,shard", nil, true},
		{"g pu:1", nil, true},
		{"gpu:h100:x", nil, true},
	}
	for _, tc := range cases {
		got, err := ParseGRES(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("%q: got %v (%v), want %v bad=%v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestParseMemory(t *testing.T) {
	cases := map[string]int64{"100": 100, "2G": 2048, "1T": 1 << 20, "512M": 512, "1536K": 2, "0": 0}
	for in, want := range cases {
		if got, err := ParseMemory(in); err != nil || got != want {
			t.Errorf("%q: got %d (%v), want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "G", "-1G", "1.5G", "12Q"} {
		if _, err := ParseMemory(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseArray(t *testing.T) {
	a, err := ParseArray("0-6:2,9%3")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Indices(), []int{0, 2, 4, 6, 9}) || a.MaxRunning != 3 || a.Count() != 5 || a.MaxIndex() != 9 {
		t.Errorf("got %v max %d", a.Indices(), a.MaxRunning)
	}
	for _, bad := range []string{"", "%2", "1-", "a", "0-5%0", "0-5:0", "0-4000001", "3-1", "0-4000000,0-1"} {
		if _, err := ParseArray(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Repeated and overlapping indices are one task each, as in Slurm's task bitmap.
func TestArrayIndicesAreDistinct(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"5,5,5", []int{5}},
		{"0-3,2-5", []int{0, 1, 2, 3, 4, 5}},
		{"9,1,4", []int{1, 4, 9}},
		{"0-10:5,5", []int{0, 5, 10}},
	} {
		a, err := ParseArray(tc.in)
		if err != nil || !reflect.DeepEqual(a.Indices(), tc.want) || a.Count() != len(tc.want) {
			t.Errorf("%q: indices %v count %d (%v), want %v", tc.in, a.Indices(), a.Count(), err, tc.want)
		}
	}
}

func TestArrayMaxIndexFollowsTheStep(t *testing.T) {
	a, err := ParseArray("0-10:4")
	if err != nil || a.MaxIndex() != 8 {
		t.Errorf("0-10:4: max index %d (%v), want 8", a.MaxIndex(), err)
	}
}

func TestParseDependency(t *testing.T) {
	d, err := ParseDependency("afterok:12:13,afterany:14+5,singleton")
	if err != nil {
		t.Fatal(err)
	}
	want := []Dependency{{"afterok", []uint32{12, 13}}, {"afterany", []uint32{14}}, {"singleton", nil}}
	if !reflect.DeepEqual(d.List, want) || d.Any {
		t.Errorf("got %+v", d)
	}
	if d, err := ParseDependency("afterok:1?afternotok:2"); err != nil || !d.Any {
		t.Errorf("'?' form: %+v %v", d, err)
	}
	for _, bad := range []string{"", "afterok", "afterok:x", "singleton:3", "afterok:1,afterok:2?afterany:3", "whenever:1", "afterok:0"} {
		if _, err := ParseDependency(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
