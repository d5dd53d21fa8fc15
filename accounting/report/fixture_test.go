package report

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// November 2026, with the clock at its end.
var (
	nov    = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	dec    = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now    = dec
	novQry = SreportQuery{Start: nov, End: dec}
)

func day(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }

// site records a month whose GPU-hours can be added up by hand:
//
//	job 1 alice/nlp      2 GPUs x 10 h            = 20 GPU-h
//	job 2 bob/vision     0.5 GPU x 4 h            =  2 GPU-h
//	job 3 alice/vision   8 GPUs, 2 of its 6 h in November = 16 GPU-h
//	job 4 carol/default  1 GPU, running the last 12 h      = 12 GPU-h
//	job 5 dave/nlp       pending                  =  0
//	job 6 bob/vision     4 GPUs, 1 h + requeue + 3 h       = 16 GPU-h
//	                                                 total = 66 GPU-h
//
// gpu-01 (8 GPUs) all month and gpu-02 (8 GPUs) from the 16th report
// 8 x 720 + 8 x 360 = 8640 GPU-h; gpu-01 is down 12 h = 96 GPU-h; idle is
// 8640 - 66 - 96 = 8478 GPU-h.
func site(t testing.TB) accounting.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	job := func(id int64, user, account, part, qos string, gpus float64, cpus int64, submit, start, end time.Time, st accounting.JobState) accounting.Job {
		alloc := accounting.TRES{}
		if !start.IsZero() {
			alloc = accounting.TRES{CPUs: cpus, MemMB: cpus * 8192, GPUs: gpus, Nodes: 1}
		}
		return accounting.Job{JobID: id, ArrayTaskID: -1, Name: "job" + string(rune('0'+id)), User: user, Account: account,
			Partition: part, QOS: qos, Origin: accounting.OriginSlurm, Submit: submit, Eligible: submit, Start: start, End: end,
			State: st, Requested: accounting.TRES{CPUs: cpus, MemMB: cpus * 8192, GPUs: gpus, Nodes: 1}, Allocated: alloc,
			NodeList: map[bool]string{true: "gpu-01", false: ""}[!start.IsZero()]}
	}
	failed := job(2, "bob", "vision", "a100", "preemptible", 0.5, 4, day(4, 23), day(5, 0), day(5, 4), accounting.StateFailed)
	failed.ExitCode = 1
	manifest := job(4, "carol", "default", "h100", "normal", 1, 8, day(30, 11), day(30, 12), time.Time{}, accounting.StateRunning)
	manifest.Origin, manifest.Namespace, manifest.PodGroup, manifest.Name = accounting.OriginKubernetes, "team-c", "train-abc", "train-abc"
	manifest.NodeList, manifest.Allocated.Nodes = "gpu-01,gpu-02", 2 // the ledger keeps "a,b"; sacct prints gpu-[01-02]
	jobs := []accounting.Job{
		job(1, "alice", "nlp", "h100", "normal", 2, 16, day(2, 23), day(3, 0), day(3, 10), accounting.StateCompleted),
		failed,
		job(3, "alice", "vision", "h100", "high", 8, 64, time.Date(2026, 10, 31, 19, 0, 0, 0, time.UTC),
			time.Date(2026, 10, 31, 20, 0, 0, 0, time.UTC), day(1, 2), accounting.StateCompleted),
		manifest,
		job(5, "dave", "nlp", "h100", "normal", 1, 8, day(30, 0), time.Time{}, time.Time{}, accounting.StatePending),
		job(6, "bob", "vision", "a100", "normal", 4, 32, day(19, 23), day(20, 2), day(20, 5), accounting.StateCompleted),
	}
	if err := s.UpsertJobs(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	tr := func(at time.Time, st accounting.JobState) accounting.Transition {
		return accounting.Transition{JobID: 6, At: at, State: st}
	}
	if err := s.RecordTransitions(ctx, []accounting.Transition{
		tr(day(19, 23), accounting.StatePending), tr(day(20, 0), accounting.StateRunning),
		tr(day(20, 1), accounting.StateRequeued), tr(day(20, 1), accounting.StatePending),
		tr(day(20, 2), accounting.StateRunning), tr(day(20, 5), accounting.StateCompleted),
	}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []accounting.Node{
		{Name: "gpu-01", TRES: accounting.TRES{CPUs: 64, MemMB: 524288, GPUs: 8}, Added: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)},
		{Name: "gpu-02", TRES: accounting.TRES{CPUs: 64, MemMB: 524288, GPUs: 8}, Added: day(16, 0)},
	} {
		if err := s.UpsertNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordNodeDown(ctx, accounting.NodeDown{Node: "gpu-01", Start: day(10, 0), End: day(10, 12), Reason: "XID 79"}); err != nil {
		t.Fatal(err)
	}
	return s
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}
