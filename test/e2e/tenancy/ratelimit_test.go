package tenancy

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/slurmapi"
)

// TestSubmitRateLimit: past its burst a user's submissions get 429 with a
// Retry-After and Slurm's rate-limit error; other users are not slowed.
// floodUser's limit is 2 at once, then one per 1000 s (serverConfig).
func TestSubmitRateLimit(t *testing.T) {
	s := siteFor(t)
	for i := range 2 {
		if r := s.submit(t, floodUser, nil); r.status == http.StatusTooManyRequests {
			t.Fatalf("submission %d of a burst of 2 was rate limited: %s", i+1, r)
		}
	}
	r := s.submit(t, floodUser, nil)
	e := r.requireRefused(t, http.StatusTooManyRequests, slurmapi.ErrRateLimited)
	if r.header.Get("Retry-After") == "" || e.Error != "Rate limit exceeded, please retry momentarily" {
		t.Errorf("429 with Retry-After %q, error %q; want a Retry-After and Slurm's text", r.header.Get("Retry-After"), e.Error)
	}
	s.submitOK(t, alice, nil)
}
