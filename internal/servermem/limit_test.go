package servermem

import "testing"

func TestSoftLimit(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int64
		ok   bool
	}{
		{"2147483648", 1932735283, true}, // 2Gi, as resourceFieldRef writes it
		{"536870912", 483183820, true},
		{"2Gi", 0, false}, // a quantity, not what the chart passes: ignored, not misread
		{"0", 0, false},
		{"-1", 0, false},
		{"", 0, false},
	} {
		got, ok := softLimit(tc.raw)
		if got != tc.want || ok != tc.ok {
			t.Errorf("softLimit(%q) = %d, %v; want %d, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}
