package slurmapi

import (
	"encoding/json"
	"testing"
)

func TestNoValDecodesEveryFormSlurmAccepts(t *testing.T) {
	cases := []struct {
		in      string
		want    NoVal
		wantErr bool
	}{
		{`{"set":true,"infinite":false,"number":60}`, Num(60), false},
		{`{"set":false,"infinite":false,"number":60}`, NoVal{Number: 60}, false},
		{`{"number":5}`, Num(5), false},
		{`{"infinite":true}`, Infinite(), false},
		{`60`, Num(60), false},
		{`4.0`, Num(4), false},
		{`"90"`, Num(90), false},
		{`"UNLIMITED"`, Infinite(), false},
		{`"infinite"`, Infinite(), false},
		{`null`, NoVal{}, false},
		{`4.5`, NoVal{}, true},
		{`"soon"`, NoVal{}, true},
		{`{"number":"x"}`, NoVal{}, true},
		{`[1]`, NoVal{}, true},
	}
	for _, tc := range cases {
		var got NoVal
		err := json.Unmarshal([]byte(tc.in), &got)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err = %v, wantErr %v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil && got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestNoValEncodesAsSlurmStruct(t *testing.T) {
	b, _ := json.Marshal(Num(3))
	if string(b) != `{"set":true,"infinite":false,"number":3}` {
		t.Errorf("got %s", b)
	}
}

func FuzzNoVal(f *testing.F) {
	for _, s := range []string{`{"set":true,"infinite":false,"number":60}`, `60`, `"UNLIMITED"`, `4.0`, `null`, `{"number":"1e3"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var n NoVal
		if json.Unmarshal(b, &n) != nil {
			return
		}
		// What decodes re-encodes to the struct form and decodes the same.
		out, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		var back NoVal
		if err := json.Unmarshal(out, &back); err != nil || back != n {
			t.Fatalf("%s -> %+v -> %s -> %+v (%v)", b, n, out, back, err)
		}
	})
}
