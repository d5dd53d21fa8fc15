package kube

import (
	"fmt"
	"net/http"
	"testing"
)

// TestUpdatePriorityAndUnlimitedOnRig: an operator's priority and
// UNLIMITED time limit are stored and shown; a plain user may set neither.
func TestUpdatePriorityAndUnlimitedOnRig(t *testing.T) {
	ts, _ := rigServer(t)
	status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.45/job/submit", gpuJob)
	if status != http.StatusOK {
		t.Fatalf("submit: %d %v", status, doc)
	}
	path := fmt.Sprintf("/slurm/v0.0.44/job/%d", int(doc["job_id"].(float64)))
	t.Cleanup(func() { call(t, ts, "alice", "DELETE", path, "") })
	cases := []struct {
		name, user, body string
		status           int
		field            string
		want             map[string]any
	}{
		{"user sets priority", "alice", `{"priority":{"set":true,"number":500}}`, http.StatusForbidden, "", nil},
		{"operator sets priority", "slurm", `{"priority":{"set":true,"number":500}}`, http.StatusOK, "priority", map[string]any{"set": true, "infinite": false, "number": 500.0}},
		{"operator lifts the time limit", "slurm", `{"time_limit":{"set":true,"infinite":true}}`, http.StatusOK, "time_limit", map[string]any{"set": true, "infinite": true, "number": 0.0}},
	}
	for _, c := range cases {
		if status, doc := call(t, ts, c.user, "POST", path, c.body); status != c.status {
			t.Errorf("%s: %d %v, want %d", c.name, status, doc, c.status)
			continue
		}
		if c.field == "" {
			continue
		}
		_, doc := call(t, ts, "alice", "GET", path, "")
		got := doc["jobs"].([]any)[0].(map[string]any)[c.field]
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %s is %v, want %v", c.name, c.field, got, c.want)
		}
	}
}
