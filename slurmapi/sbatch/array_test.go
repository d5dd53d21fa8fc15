package sbatch

import (
	"slices"
	"testing"
)

func TestFormatIndicesRoundTrip(t *testing.T) {
	cases := []struct {
		spec, formatted string
		step            int
	}{
		{"0-15", "0-15", 1},
		{"1,3,5", "1,3,5", 1},
		{"0-15:4", "0,4,8,12", 4},
		{"0-3%2", "0-3", 1},
		{"7", "7", 1},
		{"0-2,5,9-10", "0-2,5,9-10", 1},
	}
	for _, c := range cases {
		a, err := ParseArray(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		got := FormatIndices(a.Indices())
		if got != c.formatted || a.Step() != c.step {
			t.Errorf("%s: formatted %q step %d, want %q step %d", c.spec, got, a.Step(), c.formatted, c.step)
		}
		back, err := ParseArray(got)
		if err != nil || !slices.Equal(back.Indices(), a.Indices()) {
			t.Errorf("%s: %q reads back as %v (%v)", c.spec, got, back.Indices(), err)
		}
	}
}
