package slurmapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSubmitChecksTheUser: job/submit and job/allocate answer the site's
// refusal of a user (SubmitPolicy.CheckUser: 403 for a user mapped to no
// uid, 503 with Retry-After for an identity source that could not answer)
// before reading the body, so no job id is given; mapped users, and every
// user at a site without the check, go on to submit.
func TestSubmitChecksTheUser(t *testing.T) {
	check := func(_ context.Context, user string) *Error {
		switch user {
		case "bob":
			return Errorf(http.StatusForbidden, ErrUserIDMissing, "user", "user bob has no uid at this site")
		case "carol":
			e := Errorf(http.StatusServiceUnavailable, ErrUserIDMissing, "user", "the directory is unreachable; try again shortly")
			e.RetryAfter = 10 * time.Second
			return e
		}
		return nil
	}
	tests := []struct {
		name       string
		user       string
		check      func(context.Context, string) *Error
		wantStatus int // 0: not refused by the check
	}{
		{"mapped user", "alice", check, 0},
		{"unmapped user", "bob", check, http.StatusForbidden},
		{"directory down", "carol", check, http.StatusServiceUnavailable},
		{"any user without the check", "bob", nil, 0},
	}
	for _, tc := range tests {
		for path, handle := range map[string]handlerFunc{"job/submit": handleSubmit, "job/allocate": handleAllocate} {
			t.Run(tc.name+" "+path, func(t *testing.T) {
				srv, err := NewServer(Config{Auth: *testAuth(), Submit: SubmitPolicy{CheckUser: tc.check}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				// A body that is not JSON and a bad Idempotency-Key: a check that lets the
				// user through goes on to refuse these, with another error.
				r := httptest.NewRequest(http.MethodPost, "/slurm/v0.0.44/"+path, strings.NewReader("not json"))
				r.Header.Set(IdempotencyKeyHeader, "a\tb")
				_, got := handle(srv, &call{ctx: r.Context(), r: r, id: Identity{User: tc.user}, now: time.Now()})
				e, _ := got.(*Error)
				if tc.wantStatus == 0 {
					if e == nil || e.Number == ErrUserIDMissing || e.Status != http.StatusBadRequest {
						t.Fatalf("%s: %v, want the body or header refused, not the user", tc.user, got)
					}
					return
				}
				if e == nil || e.Status != tc.wantStatus || e.Number != ErrUserIDMissing || e.Short != "Invalid user id" {
					t.Fatalf("got %v, want %d 2010 Invalid user id", got, tc.wantStatus)
				}
			})
		}
	}
}
