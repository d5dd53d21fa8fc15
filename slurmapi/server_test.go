package slurmapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/sluicehq/sluice/slurmapi/openapi"
	"github.com/sluicehq/sluice/slurmapi/openapi/openapitest"
)

// newTestServer starts the REST server over real HTTP without a cluster
// backend: what needs no cluster answers, the rest says 503.
func newTestServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv, err := NewServer(Config{Auth: *testAuth(), Hostname: "ctl"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

type reply struct {
	status int
	body   []byte
	doc    map[string]any
}

// do sends a request and validates the response against the official
// document of its version whenever the path is in one.
func do(t *testing.T, ts *httptest.Server, method, path string, headers map[string]string, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, body: b}
	if err := json.Unmarshal(b, &r.doc); err != nil {
		t.Fatalf("%s %s: body is not JSON: %q", method, path, b)
	}
	if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed && strings.Contains(path, "/v0.0.4") {
		openapitest.Check(t, method, req.URL.Path, resp.StatusCode, b)
	}
	return r
}

func tokenFor(t *testing.T, user string) map[string]string {
	return map[string]string{"X-SLURM-USER-TOKEN": mustMint(t, user, time.Hour)}
}

// firstError returns errors[0] of a reply.
func firstError(t *testing.T, r reply) map[string]any {
	t.Helper()
	errs, _ := r.doc["errors"].([]any)
	if len(errs) == 0 {
		t.Fatalf("no errors[] entry in %s", r.body)
	}
	e := errs[0].(map[string]any)
	for _, k := range []string{"error_number", "error", "description", "source"} {
		if _, ok := e[k]; !ok {
			t.Errorf("errors[0] lacks %q: %v", k, e)
		}
	}
	return e
}

func TestPingLicensesDiagInEveryVersion(t *testing.T) {
	ts := newTestServer(t)
	alice := tokenFor(t, "alice")
	for _, v := range openapi.Versions {
		for _, plugin := range []string{"slurm", "slurmdb"} {
			r := do(t, ts, "GET", "/"+plugin+"/"+v+"/ping/", alice, "")
			if plugin == "slurmdb" && v == "v0.0.41" {
				if r.status != 404 {
					t.Errorf("v0.0.41 has no slurmdb ping, got %d", r.status)
				}
				continue
			}
			if r.status != 200 {
				t.Fatalf("%s ping: %d %s", v, r.status, r.body)
			}
			ping := r.doc["pings"].([]any)[0].(map[string]any)
			// v0.0.41 says "pinged", later versions "responding".
			if ping["hostname"] != "ctl" || (ping["responding"] != true && ping["pinged"] != "UP") {
				t.Errorf("%s %s ping = %v", plugin, v, ping)
			}
			meta := r.doc["meta"].(map[string]any)
			if meta["plugin"].(map[string]any)["data_parser"] != "data_parser/"+v {
				t.Errorf("%s meta = %v", v, meta)
			}
		}
		r := do(t, ts, "GET", "/slurm/"+v+"/licenses", alice, "")
		if r.status != 200 || len(r.doc["licenses"].([]any)) != 0 {
			t.Errorf("%s licenses: %d %s", v, r.status, r.body)
		}
	}
	r := do(t, ts, "GET", "/slurm/v0.0.44/diag/", alice, "")
	stats := r.doc["statistics"].(map[string]any)
	rpcs := stats["rpcs_by_message_type"].([]any)
	found := false
	for _, x := range rpcs {
		row := x.(map[string]any)
		if row["message_type"] == "GET slurm/ping" && row["count"].(float64) == 5 {
			found = true
		}
	}
	if !found {
		t.Errorf("diag does not count the 5 slurm pings: %v", rpcs)
	}
	r = do(t, ts, "GET", "/slurmdb/v0.0.43/cluster/sluice", alice, "")
	if r.status != 200 || r.doc["clusters"].([]any)[0].(map[string]any)["name"] != "sluice" {
		t.Errorf("cluster/sluice: %d %s", r.status, r.body)
	}
	if r = do(t, ts, "GET", "/slurmdb/v0.0.43/cluster/other", alice, ""); r.status != 404 {
		t.Errorf("cluster/other: %d", r.status)
	}
	r = do(t, ts, "GET", "/slurmdb/v0.0.45/diag", alice, "")
	if r.status != 200 || r.doc["statistics"].(map[string]any)["time_start"] == nil {
		t.Errorf("slurmdb diag: %d %s", r.status, r.body)
	}
}

func TestAuthOverHTTP(t *testing.T) {
	ts := newTestServer(t)
	alice := mustMint(t, "alice", time.Hour)
	expired, _ := mintAt(testKey, "alice", time.Now().Add(-time.Hour), time.Minute)
	cases := []struct {
		name    string
		headers map[string]string
		status  int
		want    string
	}{
		{"no token", nil, 401, "no token"},
		{"expired", map[string]string{"X-SLURM-USER-TOKEN": expired}, 401, "expired"},
		{"both headers", map[string]string{"X-SLURM-USER-TOKEN": alice, "Authorization": "Bearer " + alice}, 401, "both"},
		{"impersonation", map[string]string{"X-SLURM-USER-TOKEN": alice, "X-SLURM-USER-NAME": "bob"}, 401, "does not match"},
		{"bearer works", map[string]string{"Authorization": "Bearer " + alice}, 200, ""},
	}
	for _, tc := range cases {
		r := do(t, ts, "GET", "/slurm/v0.0.45/ping", tc.headers, "")
		if r.status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, r.status, tc.status, r.body)
			continue
		}
		if tc.want != "" {
			e := firstError(t, r)
			if !strings.Contains(e["description"].(string), tc.want) || e["error_number"].(float64) != ErrRestAuthFail {
				t.Errorf("%s: entry %v", tc.name, e)
			}
		}
	}
}

func TestErrorsAndUnimplemented(t *testing.T) {
	ts := newTestServer(t)
	alice := tokenFor(t, "alice")
	cases := []struct {
		name, method, path string
		status, number     int
		want               string
	}{
		{"unknown URL", "GET", "/slurm/v0.0.45/nothing", 404, ErrRestUnknownURL, "no endpoint"},
		{"unknown version", "GET", "/slurm/v0.0.39/ping", 404, ErrRestUnknownURL, "no endpoint"},
		{"requeue only in v0.0.45", "GET", "/slurm/v0.0.41/job/5/requeue", 404, ErrRestUnknownURL, "no endpoint"},
		{"wrong method", "PUT", "/slurm/v0.0.45/ping", 405, ErrRestUnknownMethod, "not a method"},
		{"reconfigure", "GET", "/slurm/v0.0.45/reconfigure/", 501, ErrNotSupported, "without reconfigure"},
		{"reservations without backend", "GET", "/slurm/v0.0.45/reservations/", 503, ErrNotSupported, "without a cluster backend"},
		{"allocate without backend", "POST", "/slurm/v0.0.43/job/allocate", 503, ErrNotSupported, "without a cluster backend"},
		{"node delete", "DELETE", "/slurm/v0.0.42/node/n1", 501, ErrNotSupported, "kubectl delete node"},
		{"wckeys", "GET", "/slurmdb/v0.0.41/wckeys", 501, ErrNotSupported, "workload characterization"},
		{"jobs without backend", "GET", "/slurm/v0.0.45/jobs", 503, ErrNotSupported, "without a cluster backend"},
		{"submit without backend", "POST", "/slurm/v0.0.41/job/submit", 503, ErrNotSupported, "without a cluster backend"},
	}
	for _, tc := range cases {
		r := do(t, ts, tc.method, tc.path, alice, "{}")
		if r.status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, r.status, tc.status, r.body)
			continue
		}
		e := firstError(t, r)
		if int(e["error_number"].(float64)) != tc.number || !strings.Contains(e["description"].(string), tc.want) {
			t.Errorf("%s: entry %v, want %d containing %q", tc.name, e, tc.number, tc.want)
		}
	}
}

func TestTrailingSlashesDoNotMatter(t *testing.T) {
	ts := newTestServer(t)
	alice := tokenFor(t, "alice")
	for _, p := range []string{"/slurm/v0.0.45/ping", "/slurm/v0.0.45/ping/", "/slurm/v0.0.45/ping//", "/slurm/v0.0.45/shares/"} {
		r := do(t, ts, "GET", p, alice, "")
		if r.status == 404 {
			t.Errorf("%s: 404", p)
		}
	}
}

func TestOpenAPIDocumentDescribesThisServer(t *testing.T) {
	ts := newTestServer(t)
	resp, err := http.Get(ts.URL + "/openapi/v3")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("document does not load: %v", err)
	}
	for _, want := range []string{"/slurm/v0.0.41/job/submit", "/slurm/v0.0.41/job/allocate", "/slurm/v0.0.45/job/{job_id}/requeue", "/slurmdb/v0.0.43/qos/{qos}"} {
		if doc.Paths.Value(want) == nil {
			t.Errorf("document lacks %s", want)
		}
	}
	for _, absent := range []string{"/slurm/v0.0.45/reconfigure/"} {
		if doc.Paths.Value(absent) != nil {
			t.Errorf("document lists unimplemented %s", absent)
		}
	}
	// POST drains or resumes a node; DELETE (removing one) is Kubernetes'.
	if item := doc.Paths.Value("/slurm/v0.0.45/node/{node_name}"); item == nil || item.Post == nil || item.Get == nil || item.Delete != nil {
		t.Errorf("node/{node_name} should have GET and POST, no DELETE: %+v", item)
	}
}

func TestBodyLimit(t *testing.T) {
	srv, err := NewServer(Config{Auth: *testAuth(), MaxBodyBytes: 64}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/slurm/v0.0.45/job/submit", strings.NewReader(strings.Repeat("x", 100)))
	req.Header.Set("X-SLURM-USER-TOKEN", mustMint(t, "alice", time.Hour))
	c := &call{ctx: req.Context(), r: req}
	req.Body = http.MaxBytesReader(rec, req.Body, srv.cfg.MaxBodyBytes)
	if _, e := readBody(c); e == nil || e.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("over-limit body: %v", e)
	}
}
