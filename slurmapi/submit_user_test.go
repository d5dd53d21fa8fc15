package slurmapi

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDecodeSubmissionRefusesUnmappedUsers: a site that refuses users it maps
// to no uid answers their submissions 403 with Slurm's "Invalid user id",
// before any job id is given; mapped users, and every user at a site
// without the rule, submit as before.
func TestDecodeSubmissionRefusesUnmappedUsers(t *testing.T) {
	mapped := func(user string) bool { return user == "alice" }
	body := []byte(`{"script":"#!/bin/sh\ntrue\n","job":{}}`)
	tests := []struct {
		name    string
		user    string
		mayRun  func(string) bool
		refused bool
	}{
		{"mapped user", "alice", mapped, false},
		{"unmapped user", "bob", mapped, true},
		{"any user without the rule", "bob", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _, err := DecodeSubmission(body, tc.user, testCatalog(), SubmitPolicy{MayRun: tc.mayRun}, time.Now())
			if !tc.refused {
				if err != nil || d.User != tc.user {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("%s's job accepted", tc.user)
			}
			if err.Status != http.StatusForbidden || err.Number != ErrUserIDMissing || err.Short != "Invalid user id" ||
				err.Source != "user" || !strings.Contains(err.Description, "user "+tc.user+" has no uid") {
				t.Errorf("got %+v, want 403 %d Invalid user id naming %s", err, ErrUserIDMissing, tc.user)
			}
		})
	}
}
