package tenancy

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi"
)

// TestOtherUsersJobIsRefused: bob may not read, cancel, change, read the
// log of, or query the accounting of alice's job; and after all his tries
// the job is still there, still alice's, still pending or running.
func TestOtherUsersJobIsRefused(t *testing.T) {
	s := siteFor(t)
	id := s.submitOK(t, alice, nil)
	s.waitAccounted(t, id) // until then slurmdb knows no job to refuse
	tests := []struct {
		name, method, path string
		body               any
	}{
		{"read the job", http.MethodGet, api + "/job/" + id, nil},
		{"cancel the job", http.MethodDelete, api + "/job/" + id, nil},
		{"hold the job", http.MethodPost, api + "/job/" + id, map[string]any{"hold": true}},
		{"requeue the job", http.MethodGet, api + "/job/" + id + "/requeue", nil},
		{"read the job's log", http.MethodGet, strings.Replace(slurmapi.JobLogPath, "{job_id}", id, 1), nil},
		{"query slurmdb for the job", http.MethodGet, "/slurmdb/v0.0.45/job/" + id, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.do(t, bob, tc.method, tc.path, tc.body, nil).requireRefused(t, http.StatusForbidden, slurmapi.ErrAccessDenied)
		})
	}
	j := s.job(t, id)
	if j["user_name"] != alice || j["hold"] == true {
		t.Errorf("after bob's tries, job %s is user %v, hold %v; want alice's, not held", id, j["user_name"], j["hold"])
	}
	if st := state(j); st != "PENDING" && st != "RUNNING" {
		t.Errorf("after bob's tries, job %s is %v; want it still pending or running", id, st)
	}
	// Bob's own listing does not show it either.
	r := s.get(t, bob, api+"/jobs")
	r.requireOK(t)
	if strings.Contains(string(r.body), `"job_id":`+id+",") {
		t.Errorf("bob's GET jobs lists alice's job %s: %s", id, r.body)
	}
}

// TestForgedIdentityIsUnauthorized: a token that claims another user, or
// one that is not signed with the server's key, gets 401 and no answer.
func TestForgedIdentityIsUnauthorized(t *testing.T) {
	s := siteFor(t)
	unsigned := func(user string) string {
		enc := base64.RawURLEncoding.EncodeToString
		claims := `{"sun":"` + user + `","exp":` + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10) + `}`
		return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc([]byte(claims)) + "."
	}
	tests := []struct {
		name   string
		header map[string]string
	}{
		{"alice's token naming bob", map[string]string{"X-SLURM-USER-TOKEN": s.token(t, alice), "X-SLURM-USER-NAME": bob}},
		{"alg none token", map[string]string{"X-SLURM-USER-TOKEN": unsigned(bob)}},
		{"alg none bearer", map[string]string{"Authorization": "Bearer " + unsigned(adminUser)}},
		{"no token", map[string]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{api + "/jobs", "/slurmdb/v0.0.45/associations"} {
				r := s.raw(t, http.MethodGet, path, nil, tc.header)
				r.requireRefused(t, http.StatusUnauthorized, slurmapi.ErrRestAuthFail)
				if strings.Contains(string(r.body), `"jobs":[{`) || strings.Contains(string(r.body), `"associations":[{`) {
					t.Errorf("a refused request still got data: %s", r.body)
				}
			}
		})
	}
}
