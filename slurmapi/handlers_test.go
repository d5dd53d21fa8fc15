package slurmapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

func TestParseSignal(t *testing.T) {
	cases := []struct {
		in   string
		want int
		bad  bool
	}{
		{"", 9, false}, {"9", 9, false}, {"KILL", 9, false}, {"SIGTERM", 15, false},
		{"term", 15, false}, {"USR1", 10, false}, {"0", 0, true}, {"BOGUS", 0, true}, {"99", 0, true},
	}
	for _, tc := range cases {
		got, err := parseSignal(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("%q: got %d (%v), want %d bad=%v", tc.in, got, err, tc.want, tc.bad)
		}
		if err != nil && err.Status != http.StatusBadRequest {
			t.Errorf("%q: status %d, want 400", tc.in, err.Status)
		}
	}
}

func TestParseJobID(t *testing.T) {
	for in, want := range map[string]uint32{"1": 1, " 42 ": 42, "4294967295": 4294967295} {
		if got, err := parseJobID(in, "job_id"); err != nil || got != want {
			t.Errorf("%q: got %d (%v)", in, got, err)
		}
	}
	for _, bad := range []string{"", "0", "-1", "12_3", "abc", "4294967296"} {
		if _, err := parseJobID(bad, "job_id"); err == nil || err.Number != ErrInvalidJobID {
			t.Errorf("%q accepted or wrong error: %v", bad, err)
		}
	}
}

func TestTRESList(t *testing.T) {
	got := tresList("cpu=16,mem=64G,node=2,gres/gpu=8")
	want := []any{
		map[string]any{"type": "cpu", "name": "", "count": int64(16)},
		map[string]any{"type": "mem", "name": "", "count": int64(65536)},
		map[string]any{"type": "node", "name": "", "count": int64(2)},
		map[string]any{"type": "gres", "name": "gpu", "count": int64(8)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
	if len(tresList("")) != 0 {
		t.Error("empty TRES string gave entries")
	}
	// A quarter of a GPU holds one device in the integer count.
	if got := tresList("gres/gpu=0.25"); !reflect.DeepEqual(got, []any{map[string]any{"type": "gres", "name": "gpu", "count": int64(1)}}) {
		t.Errorf("fractional GPU: got %v, want a count of 1", got)
	}
}

func TestValidObjectName(t *testing.T) {
	for name, want := range map[string]bool{"nlp": true, "team-a1": true, "": false, "NLP": false, "-a": false, "a-": false, "a_b": false} {
		if validObjectName(name) != want {
			t.Errorf("%q: want %v", name, want)
		}
	}
}

func TestParseJobRef(t *testing.T) {
	cases := []struct {
		in      string
		id      uint32
		task    int // -1: no task
		invalid bool
	}{
		{"123", 123, -1, false},
		{"123_4", 123, 4, false},
		{" 7_0", 7, 0, false},
		{"123_", 0, 0, true},
		{"123_x", 0, 0, true},
		{"123_-1", 0, 0, true},
		{"_4", 0, 0, true},
		{"0", 0, 0, true},
		{"12_3_4", 0, 0, true},
	}
	for _, c := range cases {
		id, task, e := parseJobRef(c.in, "job_id")
		if (e != nil) != c.invalid {
			t.Errorf("%q: error %v, want invalid=%v", c.in, e, c.invalid)
			continue
		}
		if c.invalid {
			if e.Status != 400 {
				t.Errorf("%q: status %d, want 400", c.in, e.Status)
			}
			continue
		}
		gotTask := -1
		if task != nil {
			gotTask = *task
		}
		if id != c.id || gotTask != c.task {
			t.Errorf("%q: %d task %d, want %d task %d", c.in, id, gotTask, c.id, c.task)
		}
	}
}

// TestKillJobsUnsupportedFilter: a DELETE jobs/ filter Sluice cannot apply
// is named, so the request is refused instead of signalling more jobs.
func TestKillJobsUnsupportedFilter(t *testing.T) {
	cases := []struct {
		body, want string
	}{
		{`{"user_name":"alice","account":"nlp"}`, ""},
		{`{"account":"nlp","user_id":"1002"}`, "user_id"},
		{`{"account":"nlp","nodes":"node-[1-2]"}`, "nodes"},
		{`{"account":"nlp","nodes":["node-1"]}`, "nodes"},
		{`{"account":"nlp","reservation":"maint"}`, "reservation"},
		{`{"account":"nlp","wckey":"x"}`, "wckey"},
		{`{"account":"nlp","user_id":"","nodes":null,"wckey":"","reservation":"","flags":["FULL_JOB"]}`, ""},
		{`{"account":"nlp","nodes":[]}`, ""},
	}
	for _, tc := range cases {
		var in killJobsIn
		if err := json.Unmarshal([]byte(tc.body), &in); err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if got := in.unsupportedFilter(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.body, got, tc.want)
		}
	}
}

// TestNodeUpdateStates: as slurmctld, DRAIN needs a reason, RESUME and
// UNDRAIN end a drain, and other states are refused.
func TestNodeUpdateStates(t *testing.T) {
	cases := []struct {
		in    nodeUpdateIn
		drain bool
		errno int
	}{
		{nodeUpdateIn{State: []string{"DRAIN"}, Reason: "maint"}, true, 0},
		{nodeUpdateIn{State: []string{"drain"}}, false, ErrInvalidNodeState},
		{nodeUpdateIn{State: []string{"RESUME"}}, false, 0},
		{nodeUpdateIn{State: []string{"UNDRAIN"}}, false, 0},
		{nodeUpdateIn{State: []string{"DOWN"}, Reason: "x"}, false, ErrInvalidNodeState},
		{nodeUpdateIn{}, false, ErrInvalidNodeState},
	}
	for _, tc := range cases {
		u, err := nodeUpdate(tc.in, "root")
		switch {
		case tc.errno != 0 && (err == nil || err.Number != tc.errno):
			t.Errorf("%+v: %v, want error %d", tc.in, err, tc.errno)
		case tc.errno == 0 && (err != nil || u.Drain != tc.drain):
			t.Errorf("%+v: %+v %v", tc.in, u, err)
		}
	}
}
