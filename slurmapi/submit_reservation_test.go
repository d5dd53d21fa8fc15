package slurmapi

import (
	"strings"
	"testing"
	"time"
)

// A job names a reservation that exists and lists its user or account, as slurmctld
// checks at submission; the name is kept on the job.
func TestSubmissionChecksTheReservation(t *testing.T) {
	cat := testCatalog()
	ended := Reservation{Name: "old", Start: resvNow.Add(-2 * time.Hour), End: resvNow.Add(-time.Hour), Users: []string{"alice"}}
	forAlice := Reservation{Name: "alice-only", Start: resvNow, End: resvNow.Add(time.Hour), Users: []string{"alice"}}
	hack := nlpHack()
	cat.Reservations = map[string]*Reservation{"nlp-hack": &hack, "old": &ended, "alice-only": &forAlice}
	cases := []struct {
		name, user, body string
		status, number   int
	}{
		{"none", "alice", `{"script":"#!/bin/sh\n","job":{}}`, 0, 0},
		{"account listed", "alice", `{"script":"#!/bin/sh\n","job":{"reservation":"nlp-hack"}}`, 0, 0},
		{"user listed", "alice", `{"script":"#!/bin/sh\n","job":{"reservation":"alice-only"}}`, 0, 0},
		{"directive", "alice", `{"script":"#!/bin/sh\n#SBATCH --reservation=nlp-hack\n","job":{}}`, 0, 0},
		{"unknown", "alice", `{"script":"#!/bin/sh\n","job":{"reservation":"maint"}}`, 400, ErrReservationInvalid},
		{"ended", "alice", `{"script":"#!/bin/sh\n","job":{"reservation":"old"}}`, 400, ErrReservationInvalid},
		{"account not listed", "bob", `{"script":"#!/bin/sh\n","job":{"reservation":"nlp-hack"}}`, 403, ErrReservationAccess},
		{"user not listed", "bob", `{"script":"#!/bin/sh\n#SBATCH --reservation=alice-only\n","job":{}}`, 403, ErrReservationAccess},
	}
	for _, tc := range cases {
		d, _, e := DecodeSubmission([]byte(tc.body), tc.user, cat, SubmitPolicy{}, resvNow)
		switch {
		case tc.status == 0 && e != nil:
			t.Errorf("%s: refused: %v", tc.name, e)
		case tc.status == 0 && strings.Contains(tc.body, "reservation") && d.Reservation == "":
			t.Errorf("%s: the job lost its reservation", tc.name)
		case tc.status != 0 && e == nil:
			t.Errorf("%s: accepted", tc.name)
		case tc.status != 0 && (e.Status != tc.status || e.Number != tc.number || e.Short != shortText[tc.number]):
			t.Errorf("%s: %d %d %q, want %d %d", tc.name, e.Status, e.Number, e.Short, tc.status, tc.number)
		}
	}
}
