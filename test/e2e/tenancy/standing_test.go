package tenancy

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/slurmapi"
)

// TestPriorityAndNegativeNiceNeedAnOperator: alice cannot jump the queue
// with a priority or a negative nice, at submit or by updating her job;
// nothing of a refused request is stored. She may lower her own standing;
// an operator may set either.
func TestPriorityAndNegativeNiceNeedAnOperator(t *testing.T) {
	s := siteFor(t)
	refused := []struct {
		name   string
		fields map[string]any
	}{
		{"priority 1000000", map[string]any{"priority": map[string]any{"set": true, "number": 1000000}}},
		{"priority as a plain number", map[string]any{"priority": 5}},
		{"nice -5", map[string]any{"nice": -5}},
	}
	for _, tc := range refused {
		t.Run("submit "+tc.name, func(t *testing.T) {
			name := uniqueName("standing")
			tc.fields["name"] = name
			e := s.submit(t, alice, tc.fields).requireRefused(t, http.StatusForbidden, slurmapi.ErrAccessDenied)
			if e.Error != "Access/permission denied" {
				t.Errorf("error %q, want Slurm's Access/permission denied", e.Error)
			}
			s.requireNoJobNamed(t, name)
		})
	}

	t.Run("alice lowers her own standing", func(t *testing.T) {
		id := s.submitOK(t, alice, map[string]any{"nice": 100})
		if j := s.job(t, id); j["nice"] != float64(100) {
			t.Errorf("job %s nice %v, want 100", id, j["nice"])
		}
		s.do(t, alice, http.MethodPost, api+"/job/"+id, map[string]any{"nice": 200}, nil).requireOK(t)
		for _, body := range []map[string]any{{"nice": 100}, {"nice": -5}, {"priority": 1000000}} {
			s.do(t, alice, http.MethodPost, api+"/job/"+id, body, nil).requireRefused(t, http.StatusForbidden, slurmapi.ErrAccessDenied)
		}
		j := s.job(t, id)
		if j["nice"] != float64(200) || priority(j) >= 1000000 {
			t.Errorf("after refused updates job %s has nice %v, priority %v; want nice 200 and no raised priority", id, j["nice"], j["priority"])
		}
	})

	t.Run("an operator sets priority and nice", func(t *testing.T) {
		id := s.submitOK(t, alice, nil)
		qos := priority(s.job(t, id)) // its QOS's, until an operator adds to it
		s.do(t, operatorUser, http.MethodPost, api+"/job/"+id, map[string]any{"priority": 1000000, "nice": -5}, nil).requireOK(t)
		// Shown as the scheduler orders by it: the operator's 1000000 and the QOS's, less
		// the nice of -5.
		if j := s.job(t, id); priority(j) != qos+1000005 || j["nice"] != float64(-5) {
			t.Errorf("job %s priority %v nice %v, want %v and -5", id, j["priority"], j["nice"], qos+1000005)
		}
	})
}

// priority is a job record's priority number.
func priority(j map[string]any) float64 { return number(j["priority"]) }

// TestActingAsAnotherUser: an admin's token with X-SLURM-USER-NAME acts
// with that user's rights, never the admin's; nobody else may act as
// another user.
func TestActingAsAnotherUser(t *testing.T) {
	s := siteFor(t)
	alices := s.submitOK(t, alice, nil)
	bobs := s.submitOK(t, bob, nil)
	asBob := map[string]string{"X-SLURM-USER-TOKEN": s.token(t, adminUser), "X-SLURM-USER-NAME": bob}

	r := s.raw(t, http.MethodGet, api+"/jobs", nil, asBob)
	r.requireOK(t)
	for _, j := range r.doc["jobs"].([]any) {
		if owner := j.(map[string]any)["user_name"]; owner != bob {
			t.Errorf("acting as bob, the admin sees a job of %v", owner)
		}
	}
	if r.doc["meta"].(map[string]any)["client"].(map[string]any)["user"] != bob {
		t.Errorf("meta.client.user is not bob: %v", r.doc["meta"])
	}
	s.raw(t, http.MethodGet, api+"/job/"+bobs, nil, asBob).requireOK(t)
	s.raw(t, http.MethodGet, api+"/job/"+alices, nil, asBob).requireRefused(t, http.StatusForbidden, slurmapi.ErrAccessDenied)
	s.raw(t, http.MethodDelete, api+"/job/"+alices, nil, asBob).requireRefused(t, http.StatusForbidden, slurmapi.ErrAccessDenied)
	s.raw(t, http.MethodPost, api+"/job/submit", jobBody(map[string]any{"priority": 10}), asBob).requireRefused(t, http.StatusForbidden, slurmapi.ErrAccessDenied)
	s.raw(t, http.MethodPost, "/slurmdb/v0.0.45/associations", map[string]any{"associations": []any{map[string]any{"account": "vision", "user": "mallory"}}}, asBob).
		requireRefused(t, http.StatusForbidden, slurmapi.ErrAccessDenied)
	if st := state(s.job(t, alices)); st != "PENDING" && st != "RUNNING" {
		t.Errorf("alice's job %s is %s after the admin acting as bob tried to cancel it", alices, st)
	}

	sub := s.raw(t, http.MethodPost, api+"/job/submit", jobBody(nil), asBob)
	sub.requireOK(t)
	id := sub.doc["job_id"].(float64)
	t.Cleanup(func() { s.del(t, operatorUser, api+"/job/"+formatID(id)) })
	if j := s.job(t, formatID(id)); j["user_name"] != bob || j["account"] != "vision" {
		t.Errorf("submitted acting as bob: user %v account %v, want bob's job in vision", j["user_name"], j["account"])
	}

	for _, caller := range []string{operatorUser, alice} {
		h := map[string]string{"X-SLURM-USER-TOKEN": s.token(t, caller), "X-SLURM-USER-NAME": bob}
		s.raw(t, http.MethodGet, api+"/jobs", nil, h).requireRefused(t, http.StatusUnauthorized, slurmapi.ErrRestAuthFail)
	}
}
