package slurmapi

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSubmissionStandingNeedsAnOperator: a priority or a negative nice at
// submit is refused with Slurm's access-denied error for users and
// coordinators, and accepted from operators and admins.
func TestSubmissionStandingNeedsAnOperator(t *testing.T) {
	auth := testAuth()
	user, coord, op, admin := auth.identity("alice"), auth.identity("carol"), auth.identity("slurm"), auth.identity("root")
	tests := []struct {
		name    string
		job     map[string]any
		id      Identity
		refused string // the errors[] source, "" when accepted
	}{
		{"user, no priority or nice", map[string]any{}, user, ""},
		{"user lowers own standing", map[string]any{"nice": 100}, user, ""},
		{"user nice 0", map[string]any{"nice": 0}, user, ""},
		{"user sets priority", map[string]any{"priority": map[string]any{"set": true, "number": 1000000}}, user, "job.priority"},
		{"user sets priority as a plain number", map[string]any{"priority": 5}, user, "job.priority"},
		{"user negative nice", map[string]any{"nice": -5}, user, "job.nice"},
		{"coordinator sets priority", map[string]any{"priority": 10}, coord, "job.priority"},
		{"coordinator negative nice", map[string]any{"nice": -1}, coord, "job.nice"},
		{"operator sets priority", map[string]any{"priority": 1000000}, op, ""},
		{"operator negative nice", map[string]any{"nice": -5}, op, ""},
		{"admin sets both", map[string]any{"priority": 7, "nice": -7}, admin, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _, e := DecodeSubmission(body(tc.job, script), "alice", testCatalog(), SubmitPolicy{ShardsPerGPU: 8}, time.Now())
			if e != nil {
				t.Fatalf("decode: %v", e)
			}
			e = authorizeSubmission(d, tc.id)
			switch {
			case tc.refused == "" && e != nil:
				t.Errorf("refused: %v", e)
			case tc.refused != "" && e == nil:
				t.Errorf("accepted %+v from %s, want refused", tc.job, tc.id.User)
			case tc.refused != "" && (e.Status != http.StatusForbidden || e.Number != ErrAccessDenied || e.Source != tc.refused || e.Short != "Access/permission denied"):
				t.Errorf("got %d %d %q %q, want 403 ESLURM_ACCESS_DENIED from %s", e.Status, e.Number, e.Source, e.Short, tc.refused)
			}
		})
	}
}

func TestNiceOutOfRangeIsRefused(t *testing.T) {
	for _, n := range []int64{-2147483646, 2147483646, 1 << 40} {
		_, _, e := DecodeSubmission(body(map[string]any{"nice": n}, script), "alice", testCatalog(), SubmitPolicy{ShardsPerGPU: 8}, time.Now())
		if e == nil || e.Status != http.StatusBadRequest || !strings.Contains(e.Description, "outside") {
			t.Errorf("nice %d: %v, want 400 outside the range", n, e)
		}
	}
	d, _, e := DecodeSubmission(body(map[string]any{"nice": 2147483645}, script), "alice", testCatalog(), SubmitPolicy{ShardsPerGPU: 8}, time.Now())
	if e != nil || d.Nice != 2147483645 {
		t.Errorf("the largest nice: %v, nice %v", e, d)
	}
}

// TestNiceUpdate: a user may only raise their job's nice (lower its
// standing), as scontrol update nice= allows; operators set any.
func TestNiceUpdate(t *testing.T) {
	auth := testAuth()
	user, op := auth.identity("alice"), auth.identity("slurm")
	tests := []struct {
		name          string
		id            Identity
		current, next int64
		ok            bool
	}{
		{"user raises nice", user, 0, 100, true},
		{"user keeps nice", user, 50, 50, true},
		{"user lowers nice back", user, 100, 50, false},
		{"user goes negative", user, 0, -1, false},
		{"operator lowers nice", op, 100, -100, true},
		{"out of range even for an operator", op, 0, -2147483646, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := authorizeNiceUpdate(tc.id, tc.current, tc.next)
			if (e == nil) != tc.ok {
				t.Errorf("nice %d -> %d by %s: %v, want ok=%v", tc.current, tc.next, tc.id.User, e, tc.ok)
			}
		})
	}
}

// TestNiceDirective: #SBATCH --nice counts like the REST field (which wins
// over it), so a script cannot raise its standing either.
func TestNiceDirective(t *testing.T) {
	user := testAuth().identity("alice")
	tests := []struct {
		name     string
		job      map[string]any
		script   string
		wantNice int64
		refused  bool
	}{
		{"directive lowers standing", map[string]any{}, "#!/bin/bash\n#SBATCH --nice=50\n", 50, false},
		{"directive raises standing", map[string]any{}, "#!/bin/bash\n#SBATCH --nice=-5\n", -5, true},
		{"the REST field wins", map[string]any{"nice": 10}, "#!/bin/bash\n#SBATCH --nice=-5\n", 10, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _, e := DecodeSubmission(body(tc.job, tc.script), "alice", testCatalog(), SubmitPolicy{ShardsPerGPU: 8}, time.Now())
			if e != nil {
				t.Fatalf("decode: %v", e)
			}
			if d.Nice != tc.wantNice {
				t.Errorf("nice %d, want %d", d.Nice, tc.wantNice)
			}
			if e := authorizeSubmission(d, user); (e != nil) != tc.refused {
				t.Errorf("authorize: %v, want refused=%v", e, tc.refused)
			}
		})
	}
	if _, _, e := DecodeSubmission(body(map[string]any{}, "#!/bin/bash\n#SBATCH --nice=lots\n"), "alice", testCatalog(), SubmitPolicy{ShardsPerGPU: 8}, time.Now()); e == nil {
		t.Error("#SBATCH --nice=lots accepted")
	}
}
