package dashboard

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/store"
	"github.com/sluicehq/sluice/slurmapi"
)

// November 2026, the clock at its end.
var (
	nov = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	dec = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
)

func day(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }

// november records a month that adds up by hand:
//
//	job 1 alice/nlp    2 GPUs, 10 h, COMPLETED        = 20 GPU-h
//	job 2 bob/vision   0.5 GPU, 4 h, FAILED (exit 1)  =  2 GPU-h
//	job 3 carol/nlp    1 GPU, running the last 12 h   = 12 GPU-h
//	job 4 dave/vision  pending                        =  0
//
// gpu-01 (8 GPUs) reports 8 x 720 = 5760 GPU-h and is down 12 h = 96 GPU-h, so idle is
// 5760 - 34 - 96 = 5630 GPU-h.
func november(t testing.TB) accounting.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	job := func(id int64, name, user, account, part string, gpus float64, submit, start, end time.Time, st accounting.JobState) accounting.Job {
		j := accounting.Job{JobID: id, ArrayTaskID: -1, Name: name, User: user, Account: account, Partition: part, QOS: "normal",
			Origin: accounting.OriginSlurm, Submit: submit, Eligible: submit, Start: start, End: end, State: st,
			Requested: accounting.TRES{CPUs: 8, MemMB: 65536, GPUs: gpus, Nodes: 1}}
		if !start.IsZero() {
			j.Allocated, j.NodeList = j.Requested, "gpu-01"
		}
		return j
	}
	failed := job(2, "eval", "bob", "vision", "a100", 0.5, day(4, 23), day(5, 0), day(5, 4), accounting.StateFailed)
	failed.ExitCode = 1
	running := job(3, "pretrain", "carol", "nlp", "h100", 1, day(30, 11), day(30, 12), time.Time{}, accounting.StateRunning)
	running.Origin, running.Namespace, running.PodGroup = accounting.OriginKubernetes, "team-nlp", "pretrain-1a2b"
	jobs := []accounting.Job{
		job(1, "train", "alice", "nlp", "h100", 2, day(2, 23), day(3, 0), day(3, 10), accounting.StateCompleted),
		failed, running,
		job(4, "sweep", "dave", "vision", "h100", 1, day(30, 0), time.Time{}, time.Time{}, accounting.StatePending),
	}
	if err := s.UpsertJobs(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertNode(ctx, accounting.Node{Name: "gpu-01", TRES: accounting.TRES{CPUs: 64, MemMB: 524288, GPUs: 8},
		Added: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordNodeDown(ctx, accounting.NodeDown{Node: "gpu-01", Start: day(10, 0), End: day(10, 12), Reason: "XID 79"}); err != nil {
		t.Fatal(err)
	}
	return s
}

// tree is the site's fair-share tree: research -> nlp (alice, carol), vision (bob, dave).
func tree(context.Context) ([]accounting.ShareAssoc, error) {
	return []accounting.ShareAssoc{
		{Account: "research", Shares: 1},
		{Account: "nlp", Parent: "research", Shares: 3}, {Account: "vision", Parent: "research", Shares: 1},
		{Account: "nlp", User: "alice", Shares: 1}, {Account: "nlp", User: "carol", Shares: 1},
		{Account: "vision", User: "bob", Shares: 1}, {Account: "vision", User: "dave", Shares: 1},
	}, nil
}

// siteAuth is the REST API's own token check with the site's roles: ops is an
// operator, root an admin, vic coordinates vision, the rest are plain users. The
// site keeps jobs and usage private (Slurm's PrivateData=jobs,usage), so who sees
// what differs.
var siteAuth = slurmapi.AuthConfig{Key: []byte("dashboard-test-key-of-32-bytes!!"), Operators: []string{"ops"}, Admins: []string{"root"},
	Coordinators: map[string][]string{"vic": {"vision"}}, PrivateJobs: true, PrivateUsage: true}

// authenticate is what the server wires: slurmapi's Authenticate as an Authenticator.
func authenticate(r *http.Request) (Viewer, error) {
	id, err := siteAuth.Authenticate(r, time.Now())
	if err != nil {
		return nil, err
	}
	return id, nil
}

// tokenOf mints user's token with the site's key.
func tokenOf(t testing.TB, user string) string {
	tok, err := slurmapi.MintToken(siteAuth.Key, user, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func newDashboard(t testing.TB, s accounting.Store) *Dashboard {
	d, err := New(Config{Store: s, Assocs: tree, Clock: func() time.Time { return dec }, Authenticate: authenticate})
	if err != nil {
		t.Fatal(err)
	}
	return d
}
