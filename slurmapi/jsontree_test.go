package slurmapi

import (
	"encoding/json"
	"math"
	"testing"
)

func TestAppendTreeMatchesEncodingJSON(t *testing.T) {
	trees := []any{
		renderJobs(sampleJobs(), "sluice", t0),
		map[string]any{"s": "a\"b\\c\n\t\r\b\f\x01<>&\u2028\u2029é\xff", "n": nil, "b": true, "e": []any{}, "m": map[string]any{}},
		[]any{0.0, math.Copysign(0, -1), 1.5, 1e-7, 1e21, 123456789.0, 1e-6, 0.25, -3e-10, 1e300, int64(-5), uint64(1 << 63), 7},
	}
	for i, tree := range trees {
		want, err := json.Marshal(tree)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendTree(nil, tree)
		if !ok || string(got) != string(want) {
			t.Errorf("tree %d:\n got %s\nwant %s", i, got, want)
		}
	}
	for _, bad := range []any{math.NaN(), math.Inf(1), struct{}{}, []string{"x"}} {
		if _, ok := appendTree(nil, bad); ok {
			t.Errorf("%v accepted", bad)
		}
	}
}

func FuzzAppendTreeString(f *testing.F) {
	f.Add("plain", 1.5)
	f.Add("<tag> & \"quotes\" \u2028 \xff\xfe", 1e-9)
	f.Fuzz(func(t *testing.T, s string, x float64) {
		tree := map[string]any{s: []any{s, x}}
		want, err := json.Marshal(tree)
		got, ok := appendTree(nil, tree)
		if err != nil {
			if ok {
				t.Fatalf("encoding/json refused %v but appendTree wrote %s", tree, got)
			}
			return
		}
		if !ok || string(got) != string(want) {
			t.Fatalf("got %s want %s", got, want)
		}
	})
}
