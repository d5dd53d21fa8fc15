package tenancy

import (
	"net/http"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/slurmapi"
)

// On a fresh site root is an administrator, as in Slurm: root's token drains a node
// and resumes it, while alice's is refused and changes nothing.
func TestRootAdministersAFreshSite(t *testing.T) {
	s := siteFor(t)
	r := s.get(t, "root", api+"/nodes")
	r.requireOK(t)
	nodes, _ := r.doc["nodes"].([]any)
	if len(nodes) == 0 {
		t.Fatalf("no nodes: %s", r)
	}
	name := nodes[0].(map[string]any)["name"].(string)
	path := api + "/node/" + name
	drain := map[string]any{"state": []string{"DRAIN"}, "reason": "fan"}
	resume := map[string]any{"state": []string{"RESUME"}}
	t.Cleanup(func() { s.do(t, "root", http.MethodPost, path, resume, nil) })

	s.do(t, alice, http.MethodPost, path, drain, nil).requireRefused(t, http.StatusForbidden, slurmapi.ErrAccessDenied)
	if states := nodeStates(t, s, path); slices.Contains(states, "DRAIN") {
		t.Fatalf("alice's refused drain left %s %v", name, states)
	}
	s.do(t, "root", http.MethodPost, path, drain, nil).requireOK(t)
	if states := nodeStates(t, s, path); !slices.Contains(states, "DRAIN") {
		t.Fatalf("after root's drain %s is %v, want DRAIN", name, states)
	}
	s.do(t, "root", http.MethodPost, path, resume, nil).requireOK(t)
	if states := nodeStates(t, s, path); slices.Contains(states, "DRAIN") {
		t.Fatalf("after root's resume %s is %v, want no DRAIN", name, states)
	}
}

// nodeStates is the state list GET node/{name} shows.
func nodeStates(t *testing.T, s *site, path string) []string {
	t.Helper()
	r := s.get(t, "root", path)
	r.requireOK(t)
	nodes, _ := r.doc["nodes"].([]any)
	if len(nodes) != 1 {
		t.Fatalf("%s: %s", path, r)
	}
	var out []string
	for _, st := range nodes[0].(map[string]any)["state"].([]any) {
		out = append(out, st.(string))
	}
	return out
}
