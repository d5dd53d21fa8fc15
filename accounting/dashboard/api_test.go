package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/report"
	"github.com/sluicehq/sluice/slurmapi"
)

const novWindow = "start=2026-11-01&end=2026-12-01"

// get calls the dashboard over real HTTP as the operator ops and decodes the answer
// into out.
func get(t *testing.T, srv *httptest.Server, path string, out any) int {
	t.Helper()
	return getWith(t, srv, path, map[string]string{"X-SLURM-USER-TOKEN": tokenOf(t, "ops")}, out)
}

// getWith is get with the given request headers (none: no token).
func getWith(t *testing.T, srv *httptest.Server, path string, headers map[string]string, out any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: content type %q", path, ct)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("%s: %v in %s", path, err, body)
	}
	return resp.StatusCode
}

func serve(t *testing.T) (*httptest.Server, accounting.Store) {
	s := november(t)
	mux := http.NewServeMux()
	mux.Handle(Prefix, newDashboard(t, s))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, s
}

func TestOverviewAddsUpByHand(t *testing.T) {
	srv, _ := serve(t)
	var o Overview
	if code := get(t, srv, "/ui/api/overview?"+novWindow, &o); code != 200 {
		t.Fatalf("status %d", code)
	}
	u := o.Utilization
	if u.Allocated != 34*3600 || u.Down != 96*3600 || u.Idle != 5630*3600 || u.Reported != 5760*3600 {
		t.Errorf("utilization %+v: want 34, 96, 5630 of 5760 GPU-hours", u)
	}
	want := map[accounting.JobState]int{"COMPLETED": 1, "FAILED": 1, "RUNNING": 1, "PENDING": 1}
	for st, n := range want {
		if o.JobsByState[st] != n {
			t.Errorf("jobs %s = %d, want %d (all: %v)", st, o.JobsByState[st], n, o.JobsByState)
		}
	}
	if o.GPUsHeld != 1 {
		t.Errorf("GPUs held now %v, want carol's 1", o.GPUsHeld)
	}
}

func TestGPUHoursByAccountPerDay(t *testing.T) {
	srv, _ := serve(t)
	var g GPUHours
	get(t, srv, "/ui/api/gpu-hours?"+novWindow, &g)
	if g.BucketSeconds != 86400 || len(g.Buckets) != 30 {
		t.Fatalf("%d buckets of %d s, want 30 days", len(g.Buckets), g.BucketSeconds)
	}
	if len(g.Series) != 2 || g.Series[0].Account != "nlp" || g.Series[0].Total != 32 || g.Series[1].Account != "vision" || g.Series[1].Total != 2 {
		t.Fatalf("series %+v: want nlp 32 then vision 2 GPU-hours", g.Series)
	}
	nlp := g.Series[0].Hours
	if nlp[2] != 20 || nlp[29] != 12 || g.Series[1].Hours[4] != 2 {
		t.Errorf("nlp on Nov 3 %v (want 20), Nov 30 %v (want 12); vision on Nov 5 %v (want 2)", nlp[2], nlp[29], g.Series[1].Hours[4])
	}
	var hourly GPUHours
	get(t, srv, "/ui/api/gpu-hours?start=2026-11-03&end=2026-11-04", &hourly)
	if len(hourly.Buckets) != 24 || hourly.Series[0].Hours[0] != 2 || hourly.Series[0].Hours[10] != 0 {
		t.Errorf("hourly buckets %d, nlp %v: want 24 hours, 2 GPU-h an hour until 10:00", len(hourly.Buckets), hourly.Series)
	}
}

func TestFairShareMatchesSshare(t *testing.T) {
	srv, s := serve(t)
	var f FairShare
	get(t, srv, "/ui/api/fairshare", &f)
	assocs, _ := tree(context.Background())
	want, err := report.Sshare(context.Background(), s, assocs, accounting.UsageConfig{}, report.SshareQuery{}, dec)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(f.Rows), len(want))
	}
	for i, r := range f.Rows {
		got := r.Row()
		if got != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got, want[i])
		}
	}
	// dave has no usage: his LevelFS is infinite, null on the wire.
	for _, r := range f.Rows {
		if r.User == "dave" && (r.LevelFS != nil || !math.IsInf(r.Row().LevelFS, 1)) {
			t.Errorf("dave's LevelFS %v on the wire, want null", r.LevelFS)
		}
	}
}

func TestTopUsersAndJobFilters(t *testing.T) {
	srv, _ := serve(t)
	var top TopUsers
	get(t, srv, "/ui/api/top-users?"+novWindow, &top)
	if len(top.Rows) != 3 || top.Rows[0].User != "alice" || top.Rows[0].GPUHours != 20 || top.Rows[1].User != "carol" || top.Rows[2].GPUHours != 2 {
		t.Errorf("top users %+v: want alice 20, carol 12, bob 2", top.Rows)
	}
	tests := []struct {
		query string
		want  []int64
		total int
	}{
		{"", []int64{1, 2, 3, 4}, 4},
		{"accounts=vision", []int64{2, 4}, 2},
		{"states=F", []int64{2}, 1},
		{"users=alice,carol&partitions=h100", []int64{1, 3}, 2},
		{"start=2026-11-20&end=2026-12-01", []int64{3, 4}, 2},
		{"ids=3", []int64{3}, 1},
		{"limit=2", []int64{3, 4}, 4},
	}
	for _, tt := range tests {
		var js Jobs
		if code := get(t, srv, "/ui/api/jobs?"+tt.query, &js); code != 200 {
			t.Errorf("%q: status %d", tt.query, code)
			continue
		}
		var ids []int64
		for _, j := range js.Jobs {
			ids = append(ids, j.JobID)
		}
		if !equal(ids, tt.want) || js.Total != tt.total {
			t.Errorf("jobs?%s = %v of %d, want %v of %d", tt.query, ids, js.Total, tt.want, tt.total)
		}
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The sreport endpoint's table prints exactly what accounting/report prints.
func TestSreportTableIsReports(t *testing.T) {
	srv, s := serve(t)
	var got Sreport
	get(t, srv, "/ui/api/sreport?report="+url.QueryEscape("cluster Utilization")+"&t=hours&tres=gres/gpu&"+novWindow, &got)
	q := report.SreportQuery{Start: nov, End: dec, Units: report.Hours, TRES: []string{accounting.TRESGPU}}
	rows, err := report.ClusterUtilization(context.Background(), s, q, dec)
	if err != nil {
		t.Fatal(err)
	}
	var want, have bytes.Buffer
	if err := report.UtilizationTable(rows, q).WriteText(&want, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := got.Table.WriteText(&have, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if have.String() != want.String() || !strings.Contains(have.String(), "5630") {
		t.Errorf("sreport over HTTP:\n%s\nwant:\n%s", have.String(), want.String())
	}
	var health Sreport
	get(t, srv, "/ui/api/sreport?report="+url.QueryEscape("cluster NodeHealth")+"&t=hours&"+novWindow, &health)
	hrows, err := report.NodeHealth(context.Background(), s, report.SreportQuery{Start: nov, End: dec, Units: report.Hours}, dec)
	if err != nil {
		t.Fatal(err)
	}
	want.Reset()
	have.Reset()
	if err := report.HealthTable(hrows, report.SreportQuery{Start: nov, End: dec, Units: report.Hours}).WriteText(&want, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := health.Table.WriteText(&have, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if have.String() != want.String() || !strings.Contains(have.String(), "Node Health by Partition") || len(health.Table.Rows) == 0 {
		t.Errorf("NodeHealth over HTTP:\n%s\nwant:\n%s", have.String(), want.String())
	}
	var top Sreport
	get(t, srv, "/ui/api/sreport?report=user+topusage&topcount=1&"+novWindow, &top)
	if len(top.Table.Rows) != 1 || top.Table.Rows[0][1] != "alice" {
		t.Errorf("TopUsage=1 rows %v, want alice alone", top.Table.Rows)
	}
}

// Every bad parameter is a 4xx with a Slurm-style errors[] entry naming it.
func TestBadInputIsRefusedClearly(t *testing.T) {
	srv, _ := serve(t)
	tests := []struct {
		path, source, says string
		status             int
	}{
		{"/ui/api/overview?start=yesterday", "start", "want UNIX seconds", 400},
		{"/ui/api/overview?start=2026-12-01&end=2026-11-01", "end", "not after start", 400},
		{"/ui/api/jobs?states=SLEEPY", "states", "unknown job state", 400},
		{"/ui/api/jobs?ids=x", "ids", "not a positive number", 400},
		{"/ui/api/jobs?limit=-1", "limit", "whole number", 400},
		{"/ui/api/gpu-hours?bucket=week", "bucket", "want hour or day", 400},
		{"/ui/api/gpu-hours?start=2020-01-01&bucket=hour", "bucket", "at most", 400},
		{"/ui/api/sreport?report=cluster+nonsense", "report", "unknown report", 400},
		{"/ui/api/sreport?report=cluster+utilization&t=fortnights", "t", "unknown time unit", 400},
		{"/ui/api/sreport?report=cluster+utilization&tres=gres/tpu", "tres", "unknown TRES", 400},
		{"/ui/api/sreport?report=job+sizesbyaccount&grouping=x", "grouping", "not a positive number", 400},
		{"/ui/api/nope", "path", "no such dashboard endpoint", 404},
	}
	for _, tt := range tests {
		var body struct {
			Errors []struct {
				Number      int    `json:"error_number"`
				Description string `json:"description"`
				Source      string `json:"source"`
			} `json:"errors"`
		}
		code := get(t, srv, tt.path, &body)
		if code != tt.status || len(body.Errors) != 1 || body.Errors[0].Source != tt.source || !strings.Contains(body.Errors[0].Description, tt.says) {
			t.Errorf("%s: %d %+v, want %d from %s saying %q", tt.path, code, body.Errors, tt.status, tt.source, tt.says)
		}
	}
}

func TestPageAndAssetsAreEmbedded(t *testing.T) {
	srv, _ := serve(t)
	for path, want := range map[string]string{"/ui/": "<title>Sluice accounting</title>", "/ui/app.js": "api(\"overview\")", "/ui/style.css": "--alloc"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("%s: %d, body lacks %q", path, resp.StatusCode, want)
		}
		if strings.Contains(string(body), "http://") || strings.Contains(string(body), "https://") {
			if !strings.Contains(string(body), "http://www.w3.org/2000/svg") {
				t.Errorf("%s loads something from the network", path)
			}
		}
	}
}

// The API takes the REST API's tokens: none or a bad one is a 401 naming the problem;
// users see their own jobs, a coordinator their accounts' too, an operator everyone's.
func TestAPIRequiresTheRESTToken(t *testing.T) {
	srv, _ := serve(t)
	bearer := func(user string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tokenOf(t, user)}
	}
	forged, err := slurmapi.MintToken([]byte("some-other-key-of-at-least-32-bytes"), "ops", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	refused := []struct {
		name    string
		headers map[string]string
		says    string
	}{
		{"no token", nil, "no token"},
		{"forged token", map[string]string{"X-SLURM-USER-TOKEN": forged}, "signature"},
		{"garbage", map[string]string{"X-SLURM-USER-TOKEN": "not-a-jwt"}, "token"},
		{"impersonation", map[string]string{"X-SLURM-USER-TOKEN": tokenOf(t, "bob"), "X-SLURM-USER-NAME": "alice"}, "does not match"},
		{"an operator acting as a user", map[string]string{"X-SLURM-USER-TOKEN": tokenOf(t, "ops"), "X-SLURM-USER-NAME": "alice"}, "only administrators"},
	}
	for _, tt := range refused {
		for _, path := range []string{"/ui/api/jobs", "/ui/api/overview", "/ui/api/nope"} {
			var body struct {
				Errors []struct {
					Number      int    `json:"error_number"`
					Description string `json:"description"`
					Source      string `json:"source"`
				} `json:"errors"`
			}
			code := getWith(t, srv, path, tt.headers, &body)
			if code != http.StatusUnauthorized || len(body.Errors) != 1 || body.Errors[0].Number != errRestAuthFail ||
				body.Errors[0].Source != "authentication" || !strings.Contains(body.Errors[0].Description, tt.says) {
				t.Errorf("%s, %s: %d %+v, want 401 from authentication saying %q", tt.name, path, code, body.Errors, tt.says)
			}
		}
	}
	sees := []struct {
		user    string
		headers map[string]string
		want    []int64
	}{
		{"alice", bearer("alice"), []int64{1}},
		{"bob", map[string]string{"X-SLURM-USER-TOKEN": tokenOf(t, "bob")}, []int64{2}},
		{"nobody", bearer("nobody"), nil},
		{"vic (coordinates vision)", bearer("vic"), []int64{2, 4}},
		{"ops (operator)", bearer("ops"), []int64{1, 2, 3, 4}},
		{"root (admin) as alice", map[string]string{"X-SLURM-USER-TOKEN": tokenOf(t, "root"), "X-SLURM-USER-NAME": "alice"}, []int64{1}},
	}
	for _, tt := range sees {
		var js Jobs
		if code := getWith(t, srv, "/ui/api/jobs", tt.headers, &js); code != 200 {
			t.Errorf("%s: status %d", tt.user, code)
			continue
		}
		var ids []int64
		for _, j := range js.Jobs {
			ids = append(ids, j.JobID)
		}
		if !equal(ids, tt.want) || js.Total != len(tt.want) {
			t.Errorf("%s sees jobs %v of %d, want %v", tt.user, ids, js.Total, tt.want)
		}
	}
}

func TestNewRefusesNoAuthenticator(t *testing.T) {
	if _, err := New(Config{Store: november(t)}); err == nil || !strings.Contains(err.Error(), "authenticator") {
		t.Errorf("New without an authenticator: %v, want it refused", err)
	}
}
