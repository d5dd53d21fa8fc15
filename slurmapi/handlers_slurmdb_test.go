package slurmapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/store"
	"github.com/sluicehq/sluice/slurmapi/openapi"
	"github.com/sluicehq/sluice/slurmapi/openapi/openapitest"
)

// ledgerDay is an hour of 2026-11-d, UTC.
func ledgerDay(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }

// manifestID is a ledger id derived for a manifest workload without a Slurm job id.
const manifestID = int64(1)<<32 + 77

// newLedgerServer serves slurmdb's job endpoints from a real SQLite ledger
// holding finished, running and manifest jobs; there is no cluster behind it
// (the job endpoints need none once the ledger answers).
func newLedgerServer(t *testing.T) *httptest.Server {
	t.Helper()
	return newLedgerServerAuth(t, *testAuth())
}

// newLedgerServerAuth is newLedgerServer with auth's roles and privacy.
func newLedgerServerAuth(t *testing.T, auth AuthConfig) *httptest.Server {
	t.Helper()
	return newLedgerServerOver(t, auth, nil)
}

// newLedgerServerOver is newLedgerServerAuth with b answering what the ledger
// does not (accounts, associations, users).
func newLedgerServerOver(t *testing.T, auth AuthConfig, b Backend) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	job := func(id int64, name, user, account, part string, gpus float64, submit, start, end time.Time, state accounting.JobState) accounting.Job {
		j := accounting.Job{JobID: id, ArrayTaskID: -1, Name: name, User: user, Account: account, Partition: part, QOS: "normal",
			Origin: accounting.OriginSlurm, Submit: submit, Eligible: submit, Start: start, End: end, State: state,
			Requested: accounting.TRES{CPUs: 8, MemMB: 65536, GPUs: gpus, Nodes: 1}}
		if !start.IsZero() {
			j.Allocated, j.NodeList = j.Requested, "gpu-1"
		}
		return j
	}
	failed := job(2, "eval", "bob", "vision", "a100", 0.5, ledgerDay(4, 23), ledgerDay(5, 0), ledgerDay(5, 4), accounting.StateFailed)
	failed.ExitCode = 1
	twoNodes := job(1, "train", "alice", "nlp", "h100", 16, ledgerDay(2, 23), ledgerDay(3, 0), ledgerDay(3, 10), accounting.StateCompleted)
	twoNodes.Allocated.Nodes, twoNodes.NodeList = 2, "gpu-1,gpu-2"
	manifest := job(manifestID, "default/pytorchjob-x", "team-cv", "vision", "h100", 1, ledgerDay(6, 0), ledgerDay(6, 1), ledgerDay(6, 2), accounting.StateCompleted)
	manifest.Origin = accounting.OriginKubernetes
	if err := st.UpsertJobs(ctx, []accounting.Job{twoNodes, failed, manifest,
		job(3, "pretrain", "carol", "nlp", "h100", 1, ledgerDay(30, 11), ledgerDay(30, 12), time.Time{}, accounting.StateRunning),
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordSteps(ctx, []accounting.Step{
		{JobID: 2, StepID: "batch", Name: "batch", State: accounting.StateFailed, ExitCode: 1, Start: ledgerDay(5, 0), End: ledgerDay(5, 4), Tasks: 1, NodeList: "gpu-1", TRES: accounting.TRES{CPUs: 1, Nodes: 1}},
		{JobID: 2, StepID: "0", Name: "python", State: accounting.StateCancelled, Signal: 9, Start: ledgerDay(5, 1), End: ledgerDay(5, 3), Tasks: 2, NodeList: "gpu-1", TRES: accounting.TRES{CPUs: 2, GPUs: 0.5, Nodes: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(Config{Auth: auth, Hostname: "ctl"}, WithLedger(b, accounting.Ledger{Store: st}))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

// dbGet is do for a slurmdb path with a query: the answer is validated
// against the version's document by its path alone.
func dbGet(t *testing.T, ts *httptest.Server, pathAndQuery string, headers map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.URL+pathAndQuery, nil)
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
	r := reply{status: resp.StatusCode}
	if r.body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(r.body, &r.doc); err != nil {
		t.Fatalf("%s: body is not JSON: %q", pathAndQuery, r.body)
	}
	openapitest.CheckResponse(t, req, r.status, r.body)
	return r
}

// jobIDs lists the job_id of every job in a slurmdb answer.
func jobIDs(r reply) []int64 {
	var ids []int64
	jobs, _ := r.doc["jobs"].([]any)
	for _, j := range jobs {
		ids = append(ids, int64(j.(map[string]any)["job_id"].(float64)))
	}
	return ids
}

// slurmdb/jobs reads the ledger, finished jobs included, with slurmdbd's
// filters; every version's answer validates against its document (do).
func TestDBJobsReadTheLedger(t *testing.T) {
	ts := newLedgerServer(t)
	root := tokenFor(t, "root")
	for _, v := range openapi.Versions {
		r := dbGet(t, ts, "/slurmdb/"+v+"/jobs", root)
		if r.status != http.StatusOK || !slices.Equal(jobIDs(r), []int64{1, 2, 3}) {
			t.Errorf("%s: %d, jobs %v, want 1, 2, 3 from the ledger: %s", v, r.status, jobIDs(r), r.body)
		}
		if w := fmt.Sprint(r.doc["warnings"]); !strings.Contains(w, "1 manifest workloads have no Slurm job id") {
			t.Errorf("%s: warnings %s, want the unlisted manifest workload counted", v, w)
		}
	}
	tests := []struct {
		query string
		want  []int64
	}{
		{"users=alice", []int64{1}},
		{"users=alice,bob", []int64{1, 2}},
		{"account=vision", []int64{2}},
		{"partition=a100", []int64{2}},
		{"state=FAILED", []int64{2}},
		{"state=cd,r", []int64{1, 3}},
		{"job_name=train,pretrain", []int64{1, 3}},
		{"start_time=2026-11-04&end_time=2026-11-20", []int64{2}},
		{fmt.Sprintf("start_time=%d", ledgerDay(5, 4).Unix()), []int64{2, 3}},
		{"end_time=2026-11-03", []int64{1}},
		{"account=nlp&state=RUNNING", []int64{3}},
		{"users=mallory", nil},
	}
	for _, tt := range tests {
		r := dbGet(t, ts, "/slurmdb/v0.0.44/jobs?"+tt.query, root)
		if r.status != http.StatusOK || !slices.Equal(jobIDs(r), tt.want) {
			t.Errorf("jobs?%s: %d, %v, want %v", tt.query, r.status, jobIDs(r), tt.want)
		}
	}
}

// What a finished job shows: its state, times, exit code, nodes and GPUs.
func TestDBJobShowsTheRecord(t *testing.T) {
	ts := newLedgerServer(t)
	for _, v := range openapi.Versions {
		r := dbGet(t, ts, "/slurmdb/"+v+"/job/2", tokenFor(t, "bob"))
		if r.status != http.StatusOK || len(jobIDs(r)) != 1 {
			t.Fatalf("%s: %d %s", v, r.status, r.body)
		}
		j := r.doc["jobs"].([]any)[0].(map[string]any)
		state := j["state"].(map[string]any)["current"].([]any)
		tm := j["time"].(map[string]any)
		ec := j["exit_code"].(map[string]any)
		if state[0] != "FAILED" || j["user"] != "bob" || j["account"] != "vision" || j["nodes"] != "gpu-1" ||
			int64(tm["start"].(float64)) != ledgerDay(5, 0).Unix() || int64(tm["end"].(float64)) != ledgerDay(5, 4).Unix() ||
			int64(tm["elapsed"].(float64)) != 4*3600 || ec["status"].([]any)[0] != "ERROR" {
			t.Errorf("%s: job 2 rendered as %v", v, j)
		}
	}
	r := dbGet(t, ts, "/slurmdb/v0.0.44/job/1", tokenFor(t, "root"))
	j := r.doc["jobs"].([]any)[0].(map[string]any)
	gpus := -1.0
	for _, tres := range j["tres"].(map[string]any)["allocated"].([]any) {
		if e := tres.(map[string]any); e["type"] == "gres" && e["name"] == "gpu" {
			gpus = e["count"].(float64)
		}
	}
	if j["nodes"] != "gpu-[1-2]" || j["allocation_nodes"].(float64) != 2 || gpus != 16 {
		t.Errorf("job 1: nodes %v (%v), gres/gpu %v; want gpu-[1-2], 2 nodes, 16 GPUs", j["nodes"], j["allocation_nodes"], gpus)
	}
}

// TestDBJobShowsSteps: a job's record lists its steps (JOBID.batch, then
// JOBID.0) with their state, exit code, times and TRES, in every version's
// shape.
func TestDBJobShowsSteps(t *testing.T) {
	ts := newLedgerServer(t)
	for _, v := range openapi.Versions {
		r := dbGet(t, ts, "/slurmdb/"+v+"/job/2", tokenFor(t, "bob"))
		if r.status != http.StatusOK || len(jobIDs(r)) != 1 {
			t.Fatalf("%s: %d %s", v, r.status, r.body)
		}
		steps, _ := r.doc["jobs"].([]any)[0].(map[string]any)["steps"].([]any)
		if len(steps) != 2 {
			t.Fatalf("%s: steps %v, want 2.batch and 2.0", v, steps)
		}
		var got []string
		for _, st := range steps {
			m := st.(map[string]any)
			ec := m["exit_code"].(map[string]any)
			got = append(got, fmt.Sprintf("%v %v %v %v", m["step"].(map[string]any)["id"], m["state"].([]any)[0], ec["status"].([]any)[0], m["time"].(map[string]any)["elapsed"]))
		}
		if want := []string{"2.batch FAILED ERROR 14400", "2.0 CANCELLED SIGNALED 7200"}; !slices.Equal(got, want) {
			t.Errorf("%s: steps %q, want %q", v, got, want)
		}
	}
}

// Users see their own jobs; a coordinator (carol, of nlp) her accounts';
// operators everyone's.
func TestDBJobsFollowRoles(t *testing.T) {
	private := *testAuth()
	private.PrivateJobs = true // Slurm's PrivateData=jobs
	ts := newLedgerServerAuth(t, private)
	tests := []struct {
		user, query string
		want        []int64
	}{
		{"bob", "", []int64{2}},
		{"bob", "users=alice", nil},
		{"alice", "", []int64{1}},
		{"carol", "", []int64{1, 3}},
		{"carol", "account=vision", nil},
		{"slurm", "", []int64{1, 2, 3}},
	}
	for _, tt := range tests {
		r := dbGet(t, ts, "/slurmdb/v0.0.44/jobs?"+tt.query, tokenFor(t, tt.user))
		if r.status != http.StatusOK || !slices.Equal(jobIDs(r), tt.want) {
			t.Errorf("%s, jobs?%s: %d, %v, want %v", tt.user, tt.query, r.status, jobIDs(r), tt.want)
		}
	}
	if r := dbGet(t, ts, "/slurmdb/v0.0.44/job/1", tokenFor(t, "bob")); r.status != http.StatusForbidden {
		t.Errorf("bob reading alice's job 1: %d, want 403", r.status)
	}
	// Without PrivateData, as Slurm's default, everyone reads everyone's accounting.
	public := newLedgerServer(t)
	if r := dbGet(t, public, "/slurmdb/v0.0.44/jobs?users=alice", tokenFor(t, "bob")); r.status != http.StatusOK || !slices.Equal(jobIDs(r), []int64{1}) {
		t.Errorf("bob, public jobs?users=alice: %d, %v, want [1]", r.status, jobIDs(r))
	}
	if r := dbGet(t, public, "/slurmdb/v0.0.44/job/1", tokenFor(t, "bob")); r.status != http.StatusOK {
		t.Errorf("bob reading alice's job 1 without PrivateData: %d, want 200", r.status)
	}
}

// Bad filters and unknown jobs are refused with an errors[] entry naming them.
func TestDBJobsRefuseBadInput(t *testing.T) {
	ts := newLedgerServer(t)
	tests := []struct {
		path, source, says string
		status             int
	}{
		{"jobs?state=SLEEPY", "state", "unknown job state", 400},
		{"jobs?start_time=yesterday", "start_time", "want UNIX seconds", 400},
		{"jobs?end_time=2026-13-01", "end_time", "want UNIX seconds", 400},
		{"jobs?start_time=2026-11-20&end_time=2026-11-01", "end_time", "not after start_time", 400},
		{"job/99", "job_id", "no accounting record", 404},
		{"job/abc", "job_id", "not a job id", 400},
	}
	for _, tt := range tests {
		r := dbGet(t, ts, "/slurmdb/v0.0.44/"+tt.path, tokenFor(t, "root"))
		e := firstError(t, r)
		if r.status != tt.status || e["source"] != tt.source || !strings.Contains(e["description"].(string), tt.says) {
			t.Errorf("%s: %d %v, want %d from %s saying %q", tt.path, r.status, e, tt.status, tt.source, tt.says)
		}
	}
}
