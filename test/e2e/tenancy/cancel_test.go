package tenancy

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/slurmapi"
)

// TestDeleteJobsFilterNeverWidensOrSwaps: alice's DELETE jobs/ naming
// another user, or a filter Sluice cannot apply, signals nothing: neither
// bob's jobs nor her own. A filter on another account narrows to her own
// jobs there, which are none.
func TestDeleteJobsFilterNeverWidensOrSwaps(t *testing.T) {
	s := siteFor(t)
	mine := []string{s.submitOK(t, alice, nil), s.submitOK(t, alice, nil)}
	bobs := s.submitOK(t, bob, nil)
	refused := []struct {
		name   string
		body   map[string]any
		status int
		number int
	}{
		{"user_name=bob", map[string]any{"user_name": bob}, http.StatusForbidden, slurmapi.ErrAccessDenied},
		{"user_name=bob in alice's account", map[string]any{"user_name": bob, "account": "nlp"}, http.StatusForbidden, slurmapi.ErrAccessDenied},
		{"user_id filter", map[string]any{"user_id": "1002", "account": "nlp"}, http.StatusBadRequest, slurmapi.ErrNotSupported},
		{"nodes filter", map[string]any{"nodes": "h100-[0-3]", "account": "nlp"}, http.StatusBadRequest, slurmapi.ErrNotSupported},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			s.do(t, alice, http.MethodDelete, api+"/jobs", tc.body, nil).requireRefused(t, tc.status, tc.number)
		})
	}
	t.Run("account=vision", func(t *testing.T) {
		r := s.do(t, alice, http.MethodDelete, api+"/jobs", map[string]any{"account": "vision"}, nil)
		r.requireOK(t)
		if st, _ := r.doc["status"].([]any); len(st) != 0 {
			t.Errorf("alice's DELETE jobs account=vision signalled %v", st)
		}
	})
	for _, id := range append(mine, bobs) {
		if st := state(s.job(t, id)); st != "PENDING" && st != "RUNNING" {
			t.Errorf("job %s is %s after alice's filtered cancels; want it untouched", id, st)
		}
	}
	// Her own name still cancels her own jobs, as scancel -u alice does.
	r := s.do(t, alice, http.MethodDelete, api+"/jobs", map[string]any{"user_name": alice}, nil)
	r.requireOK(t)
	for _, id := range mine {
		if st := state(s.job(t, id)); st != "CANCELLED" {
			t.Errorf("job %s is %s after DELETE jobs user_name=alice by alice, want CANCELLED", id, st)
		}
	}
	if st := state(s.job(t, bobs)); st != "PENDING" && st != "RUNNING" {
		t.Errorf("bob's job %s is %s after alice cancelled her own jobs", bobs, st)
	}
}
