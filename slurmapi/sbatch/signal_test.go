package sbatch

import (
	"strings"
	"testing"
)

func TestParseSignal(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"10", "10@60", ""},
		{"USR1@90", "10@90", ""},
		{"SIGUSR2@0", "12@0", ""},
		{"B:TERM@120", "B:15@120", ""},
		{"R:10@5", "R:10@5", ""},
		{"RB:usr1@65535", "RB:10@65535", ""},
		{"X:10", "", "invalid flag"},
		{":10", "", "no flag"},
		{"0@60", "", "not 1-64"},
		{"65", "", "not 1-64"},
		{"BOGUS", "", "unknown signal"},
		{"10@-1", "", "0-65535"},
		{"10@65536", "", "0-65535"},
		{"10@soon", "", "0-65535"},
		{"", "", "unknown signal"},
	} {
		s, err := ParseSignal(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("--signal=%s: error %v, want one saying %q", c.in, err, c.err)
		case c.err == "" && (err != nil || s.String() != c.want):
			t.Errorf("--signal=%s: %q (%v), want %q", c.in, s.String(), err, c.want)
		}
	}
}
