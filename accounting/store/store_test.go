package store

import (
	"context"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func sampleJob(id int64) accounting.Job {
	return accounting.Job{
		JobID: id, ArrayJobID: 0, ArrayTaskID: -1, Name: "train", User: "alice", Account: "nlp",
		Partition: "h100", QOS: "normal", Origin: accounting.OriginSlurm, Namespace: "sluice-jobs",
		PodGroup: "job-1", Submit: at(0), Eligible: at(0), State: accounting.StatePending,
		Requested: accounting.TRES{CPUs: 8, MemMB: 64000, GPUs: 1.5, GPUMemMB: 120000, Nodes: 1},
	}
}

func TestMigrationsAreRecordedAndAppliedOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		ms, err := migrations(s.dialect)
		if err != nil {
			t.Fatal(err)
		}
		// A second migrate (a restart) must find everything applied.
		if err := s.migrate(ctx); err != nil {
			t.Fatalf("second migrate: %v", err)
		}
		got, err := s.SchemaVersions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ms) || got[len(got)-1] != ms[len(ms)-1].version {
			t.Fatalf("applied versions %v, want one per migration file (%d)", got, len(ms))
		}
	})
}

func TestUpsertJobRoundTripsAndIsIdempotent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		j := sampleJob(7)
		j.State = accounting.StateCompleted
		j.Start, j.End = at(60), at(3660)
		j.Allocated = accounting.TRES{CPUs: 8, MemMB: 64000, GPUs: 1.5, GPUMemMB: 120000, Nodes: 1}
		j.NodeList, j.ExitCode, j.ExitSignal, j.Reservation = "gpu-[01-02]", 3, 9, "hero"
		for range 2 {
			if err := s.UpsertJob(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Jobs(ctx, accounting.JobFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], j) {
			t.Fatalf("jobs after two upserts:\n got %+v\nwant [%+v]", got, j)
		}
		runs, err := s.Runs(ctx, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].End.Sub(runs[0].Start) != time.Hour || runs[0].Allocated.GPUs != 1.5 || runs[0].Reservation != "hero" {
			t.Fatalf("runs %+v, want one 1h run holding 1.5 GPUs in reservation hero", runs)
		}
	})
}

// A requeued job: two runs, 100 s and 200 s. Replayed twice and shuffled,
// the ledger must hold the same history and charge 300 s, not 600.
func TestTransitionsReplayNeitherLoseNorDoubleCount(t *testing.T) {
	history := []accounting.Transition{
		{JobID: 9, At: at(0), State: accounting.StatePending},
		{JobID: 9, At: at(10), State: accounting.StateRunning},
		{JobID: 9, At: at(110), State: accounting.StateRequeued, Reason: "preempted by high"},
		{JobID: 9, At: at(110), State: accounting.StatePending},
		{JobID: 9, At: at(200), State: accounting.StateRunning},
		{JobID: 9, At: at(400), State: accounting.StateCompleted},
	}
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		// The recorder may see transitions before the job object.
		if err := s.RecordTransitions(ctx, history[:3]); err != nil {
			t.Fatal(err)
		}
		if err := s.UpsertJob(ctx, sampleJob(9)); err != nil {
			t.Fatal(err)
		}
		replay := append(append([]accounting.Transition(nil), history...), history...)
		rand.New(rand.NewSource(1)).Shuffle(len(replay), func(i, k int) { replay[i], replay[k] = replay[k], replay[i] })
		if err := s.RecordTransitions(ctx, replay); err != nil {
			t.Fatal(err)
		}
		got, err := s.Transitions(ctx, 9)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, history) {
			t.Fatalf("history after replay:\n got %+v\nwant %+v", got, history)
		}
		jobs, err := s.Jobs(ctx, accounting.JobFilter{JobIDs: []int64{9}})
		if err != nil {
			t.Fatal(err)
		}
		j := jobs[0]
		if j.State != accounting.StateCompleted || !j.Start.Equal(at(200)) || !j.End.Equal(at(400)) || j.RequeueCount != 1 {
			t.Fatalf("job summary %s start %s end %s requeues %d; want COMPLETED, latest start +200s, end +400s, 1 requeue",
				j.State, j.Start, j.End, j.RequeueCount)
		}
		runs, err := s.Runs(ctx, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var held time.Duration
		for _, r := range runs {
			held += r.End.Sub(r.Start)
		}
		if len(runs) != 2 || held != 300*time.Second {
			t.Fatalf("runs %+v hold %s, want 2 runs holding 300s", runs, held)
		}
	})
}

func TestBadInputIsRejectedAndWritesNothing(t *testing.T) {
	good := accounting.Transition{JobID: 1, At: at(0), State: accounting.StatePending}
	cases := []struct {
		name  string
		write func(context.Context, *SQLStore) error
		want  string
	}{
		{"transition with unknown state", func(ctx context.Context, s *SQLStore) error {
			return s.RecordTransitions(ctx, []accounting.Transition{good, {JobID: 1, At: at(5), State: "EXPLODED"}})
		}, "unknown job state"},
		{"transition without time", func(ctx context.Context, s *SQLStore) error {
			return s.RecordTransitions(ctx, []accounting.Transition{good, {JobID: 1, State: accounting.StateRunning}})
		}, "time is unset"},
		{"job without account", func(ctx context.Context, s *SQLStore) error {
			j := sampleJob(2)
			j.Account = ""
			return s.UpsertJobs(ctx, []accounting.Job{sampleJob(1), j})
		}, "account is empty"},
		{"job ending before it starts", func(ctx context.Context, s *SQLStore) error {
			j := sampleJob(2)
			j.Start, j.End = at(100), at(50)
			return s.UpsertJobs(ctx, []accounting.Job{sampleJob(1), j})
		}, "before start"},
		{"node down without node", func(ctx context.Context, s *SQLStore) error {
			return s.RecordNodeDown(ctx, accounting.NodeDown{Start: at(0)})
		}, "node name is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, s *SQLStore) {
				ctx := context.Background()
				err := c.write(ctx, s)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want one mentioning %q", err, c.want)
				}
				jobs, _ := s.Jobs(ctx, accounting.JobFilter{})
				ts, _ := s.Transitions(ctx, 1)
				downs, _ := s.NodeDowns(ctx, time.Time{}, time.Time{})
				if len(jobs)+len(ts)+len(downs) != 0 {
					t.Fatalf("a rejected batch left %d jobs, %d transitions, %d down intervals", len(jobs), len(ts), len(downs))
				}
			})
		})
	}
}

func TestJobsFilter(t *testing.T) {
	mk := func(id int64, user, account, part string, st accounting.JobState, submit, start, end int) accounting.Job {
		j := sampleJob(id)
		j.User, j.Account, j.Partition, j.State = user, account, part, st
		j.Name = map[int64]string{1: "train", 2: "eval", 3: "train", 4: "sweep"}[id]
		j.Submit = at(submit)
		if start >= 0 {
			j.Start = at(start)
		}
		if end >= 0 {
			j.End = at(end)
		}
		return j
	}
	jobs := []accounting.Job{
		mk(1, "alice", "nlp", "h100", accounting.StateCompleted, 0, 10, 100),
		mk(2, "bob", "vision", "a100", accounting.StateFailed, 50, 60, 200),
		mk(3, "alice", "nlp", "a100", accounting.StateRunning, 300, 310, -1),
		mk(4, "carol", "vision", "h100", accounting.StatePending, 500, -1, -1),
	}
	cases := []struct {
		name string
		f    accounting.JobFilter
		want []int64
	}{
		{"everything", accounting.JobFilter{}, []int64{1, 2, 3, 4}},
		{"by user", accounting.JobFilter{Users: []string{"alice"}}, []int64{1, 3}},
		{"by accounts", accounting.JobFilter{Accounts: []string{"vision"}}, []int64{2, 4}},
		{"by partition", accounting.JobFilter{Partitions: []string{"a100"}}, []int64{2, 3}},
		{"by state", accounting.JobFilter{States: []accounting.JobState{accounting.StateRunning, accounting.StatePending}}, []int64{3, 4}},
		{"by job id", accounting.JobFilter{JobIDs: []int64{2, 4}}, []int64{2, 4}},
		{"by job name", accounting.JobFilter{Names: []string{"eval", "sweep"}}, []int64{2, 4}},
		// Window [150, 400): job 1 ended before it, job 4 was submitted after.
		{"window", accounting.JobFilter{Start: at(150), End: at(400)}, []int64{2, 3}},
		{"account and window", accounting.JobFilter{Accounts: []string{"nlp"}, Start: at(150), End: at(400)}, []int64{3}},
		{"nothing matches", accounting.JobFilter{Users: []string{"mallory"}}, nil},
	}
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		if err := s.UpsertJobs(ctx, jobs); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			got, err := s.Jobs(ctx, c.f)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var ids []int64
			for _, j := range got {
				ids = append(ids, j.JobID)
			}
			if !reflect.DeepEqual(ids, c.want) {
				t.Errorf("%s: got jobs %v, want %v", c.name, ids, c.want)
			}
		}
	})
}

func TestNodeDownIsOpenedThenClosed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		d := accounting.NodeDown{Node: "gpu-01", Start: at(100), Reason: "XID 79", TRES: accounting.TRES{GPUs: 8}}
		if err := s.RecordNodeDown(ctx, d); err != nil {
			t.Fatal(err)
		}
		open, err := s.NodeDowns(ctx, at(1000), at(2000))
		if err != nil || len(open) != 1 || !open[0].End.IsZero() {
			t.Fatalf("an open down interval must overlap any later window: %+v %v", open, err)
		}
		d.End = at(400)
		if err := s.RecordNodeDown(ctx, d); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			from, to int
			want     int
		}{{0, 200, 1}, {300, 500, 1}, {400, 500, 0}, {0, 100, 0}} {
			got, err := s.NodeDowns(ctx, at(c.from), at(c.to))
			if err != nil || len(got) != c.want {
				t.Errorf("window [%d,%d): %d intervals (%v), want %d", c.from, c.to, len(got), err, c.want)
			}
		}
		if err := s.UpsertNode(ctx, accounting.Node{Name: "gpu-01", TRES: accounting.TRES{CPUs: 64, GPUs: 8}, Added: at(0)}); err != nil {
			t.Fatal(err)
		}
		nodes, err := s.Nodes(ctx)
		if err != nil || len(nodes) != 1 || nodes[0].TRES.GPUs != 8 {
			t.Fatalf("nodes %+v %v", nodes, err)
		}
	})
}

func TestParseDSN(t *testing.T) {
	cases := []struct {
		dsn     string
		dialect dialect
		source  string // prefix
		err     string
	}{
		{"/var/lib/sluice/ledger.db", dialectSQLite, "file:/var/lib/sluice/ledger.db?", ""},
		{"sqlite:///var/lib/sluice/ledger.db", dialectSQLite, "file:/var/lib/sluice/ledger.db?", ""},
		{"sqlite://ledger.db", dialectSQLite, "file:ledger.db?", ""},
		{"postgres://u:p@db:5432/sluice?sslmode=disable", dialectPostgres, "postgres://u:p@db:5432/sluice", ""},
		{"postgresql://db/sluice", dialectPostgres, "postgresql://db/sluice", ""},
		{"", 0, "", "empty"},
		{"mysql://db/sluice", 0, "", "unknown scheme"},
		{"sqlite://", 0, "", "names no file"},
	}
	for _, c := range cases {
		got, err := parseDSN(c.dsn)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.dsn, err, c.err)
			}
			continue
		}
		if err != nil || got.dialect != c.dialect || !strings.HasPrefix(got.source, c.source) {
			t.Errorf("%q: got %v %q %v, want %v %q...", c.dsn, got.dialect, got.source, err, c.dialect, c.source)
		}
	}
}

func TestUpsertJobsInBulk(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		var jobs []accounting.Job
		for id := int64(1); id <= 450; id++ { // three statements' worth
			j := sampleJob(id)
			j.State, j.Start, j.End = accounting.StateCompleted, at(int(id)), at(int(id)+100)
			j.Allocated = accounting.TRES{GPUs: 1}
			jobs = append(jobs, j)
		}
		jobs[449].State, jobs[449].Start, jobs[449].End = accounting.StatePending, time.Time{}, time.Time{}
		for range 2 { // writing again changes nothing, nor does a job listed twice
			if err := s.UpsertJobs(ctx, append(jobs, jobs[7])); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Jobs(ctx, accounting.JobFilter{})
		if err != nil || len(got) != 450 || !reflect.DeepEqual(got[7], jobs[7]) {
			t.Fatalf("%d jobs after the bulk write (%v), want 450 with fields intact", len(got), err)
		}
		runs, err := s.Runs(ctx, time.Time{}, time.Time{})
		var held time.Duration
		for _, r := range runs {
			held += r.End.Sub(r.Start)
		}
		if err != nil || len(runs) != 449 || held != 449*100*time.Second {
			t.Fatalf("%d runs holding %s (%v), want 449 runs of 100 s", len(runs), held, err)
		}
		if err := s.RecordTransitions(ctx, []accounting.Transition{{JobID: 3, At: at(3), State: accounting.StateRunning}}); err != nil {
			t.Fatal(err)
		}
		// Job 3 now has a history: rewriting its record must not bring back
		// the run the record describes.
		if err := s.UpsertJobs(ctx, jobs[:5]); err != nil {
			t.Fatal(err)
		}
		runs, err = s.Runs(ctx, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.JobID == 3 && (!r.Start.Equal(at(3)) || !r.End.IsZero()) {
				t.Fatalf("job 3 run %+v, want the open run its RUNNING transition began", r)
			}
		}
	})
}

// A recorder that dies mid-batch restarts on a reopened ledger and replays
// everything it saw: the ledger ends up as if nothing happened.
func TestRestartAndReplayKeepTotals(t *testing.T) {
	var history []accounting.Transition
	var jobs []accounting.Job
	for id := int64(1); id <= 40; id++ {
		jobs = append(jobs, sampleJob(id))
		history = append(history,
			accounting.Transition{JobID: id, At: at(int(id)), State: accounting.StatePending},
			accounting.Transition{JobID: id, At: at(int(id) + 10), State: accounting.StateRunning},
			accounting.Transition{JobID: id, At: at(int(id) + 70), State: accounting.StateCompleted})
	}
	forEachDSN(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		first, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if err := first.UpsertJobs(ctx, jobs[:25]); err != nil {
			t.Fatal(err)
		}
		if err := first.RecordTransitions(ctx, history[:70]); err != nil {
			t.Fatal(err)
		}
		first.Close() // the crash
		s := openDSN(t, dsn)
		if err := s.UpsertJobs(ctx, jobs); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordTransitions(ctx, history); err != nil {
			t.Fatal(err)
		}
		runs, err := s.Runs(ctx, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var held time.Duration
		for _, r := range runs {
			held += r.End.Sub(r.Start)
		}
		if len(runs) != 40 || held != 40*60*time.Second {
			t.Fatalf("after restart and replay: %d runs holding %s, want 40 runs of 60 s", len(runs), held)
		}
	})
}

// The recorder and an import may write at once; SQLite must queue them,
// not fail with "database is locked".
func TestConcurrentWriters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		errs := make(chan error, 4)
		for w := range 4 {
			go func() {
				var err error
				for i := range 25 {
					id := int64(w*100 + i + 1)
					if err = s.UpsertJob(ctx, sampleJob(id)); err != nil {
						break
					}
					if err = s.RecordTransitions(ctx, []accounting.Transition{{JobID: id, At: at(i), State: accounting.StateRunning}}); err != nil {
						break
					}
				}
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		jobs, err := s.Jobs(ctx, accounting.JobFilter{States: []accounting.JobState{accounting.StateRunning}})
		if err != nil || len(jobs) != 100 {
			t.Fatalf("%d running jobs (%v), want 100", len(jobs), err)
		}
	})
}

// HighestJobID is where a lost job id counter starts again: 0 on an empty
// ledger, then the largest id whatever order jobs were written in.
func TestHighestJobID(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		if got, err := s.HighestJobID(ctx); err != nil || got != 0 {
			t.Fatalf("empty ledger: got %d (%v), want 0", got, err)
		}
		for _, id := range []int64{12, 4000000000, 7} {
			if err := s.UpsertJob(ctx, sampleJob(id)); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := s.HighestJobID(ctx); err != nil || got != 4000000000 {
			t.Fatalf("got %d (%v), want 4000000000", got, err)
		}
	})
}

// TestValidationHistory: validation runs are stored once per node and start (a replay
// changes nothing), read back by start window, a bad run is refused, and a node keeps
// its partition.
func TestValidationHistory(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		runs := []accounting.NodeValidation{
			{Node: "gpu-01", Partition: "h100", Kind: "idle", Start: at(100), End: at(160), Result: "Passed"},
			{Node: "gpu-01", Partition: "h100", Kind: "idle", Start: at(1000), End: at(1030), Result: "Failed", Detail: "validate exited 1"},
			{Node: "gpu-02", Partition: "h100", Kind: "idle", Start: at(500), End: at(510), Result: "Preempted", Detail: "a job took the node"},
		}
		for range 2 { // the second pass is a replay
			for _, v := range runs {
				if err := s.RecordValidation(ctx, v); err != nil {
					t.Fatal(err)
				}
			}
		}
		all, err := s.NodeValidations(ctx, time.Time{}, time.Time{})
		if err != nil || len(all) != 3 || !reflect.DeepEqual(all[1], runs[1]) {
			t.Fatalf("validations %+v %v, want the three runs once, by node and start", all, err)
		}
		if got, err := s.NodeValidations(ctx, at(400), at(1000)); err != nil || len(got) != 1 || got[0].Node != "gpu-02" {
			t.Errorf("window [400,1000): %+v %v, want gpu-02's run", got, err)
		}
		if err := s.RecordValidation(ctx, accounting.NodeValidation{Node: "gpu-01", Start: at(5), End: at(1)}); err == nil {
			t.Error("a run ending before it starts was stored")
		}
		if err := s.UpsertNode(ctx, accounting.Node{Name: "gpu-01", Partition: "h100", TRES: accounting.TRES{GPUs: 8}, Added: at(0)}); err != nil {
			t.Fatal(err)
		}
		if nodes, err := s.Nodes(ctx); err != nil || len(nodes) != 1 || nodes[0].Partition != "h100" {
			t.Errorf("nodes %+v %v, want gpu-01 in h100", nodes, err)
		}
	})
}

// TestStepsRoundTripAndReplace: steps are keyed by job and step id (a
// second report replaces the first) and come back batch step first, then
// by number.
func TestStepsRoundTripAndReplace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		steps := []accounting.Step{
			{JobID: 5, StepID: "10", Name: "b", State: accounting.StateCompleted, Start: at(20), End: at(30), Tasks: 2, TRES: accounting.TRES{CPUs: 2, GPUs: 0.5, Nodes: 1}},
			{JobID: 5, StepID: "2", Name: "a", State: accounting.StateFailed, ExitCode: 3, Start: at(10), End: at(20), Tasks: 4, NodeList: "n-[0-1]"},
			{JobID: 5, StepID: "batch", Name: "batch", State: accounting.StateRunning, Start: at(0)},
			{JobID: 6, StepID: "batch", Name: "batch", State: accounting.StateCompleted},
		}
		if err := s.RecordSteps(ctx, steps); err != nil {
			t.Fatal(err)
		}
		steps[2].State, steps[2].End = accounting.StateFailed, at(40)
		if err := s.RecordSteps(ctx, steps[2:3]); err != nil {
			t.Fatal(err)
		}
		got, err := s.Steps(ctx, []int64{5})
		if err != nil {
			t.Fatal(err)
		}
		want := []accounting.Step{steps[2], steps[1], steps[0]}
		if len(got) != 3 {
			t.Fatalf("got %+v", got)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("step %d: got %+v, want %+v", i, got[i], want[i])
			}
		}
		if err := s.RecordSteps(ctx, []accounting.Step{{JobID: 5, StepID: "x", State: accounting.StateCompleted}}); err == nil {
			t.Error("a step id that is neither batch nor a number was accepted")
		}
	})
}

// sacct -j with tens of thousands of ids, or a new leader's recorder asking for every job
// of the submit batches, is answered whole and in order, not refused for naming more
// parameters than the database takes in one statement.
func TestJobsByMoreIDsThanOneStatementTakes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		const stored = 3 * jobIDsPerQuery / 2
		jobs := make([]accounting.Job, stored)
		for i := range jobs {
			jobs[i] = sampleJob(int64(2*i + 1)) // odd ids
		}
		if err := s.UpsertJobs(ctx, jobs); err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, 0, 4*stored)
		for id := int64(4 * stored); id > 0; id-- { // descending, every job asked for, odd ones twice
			ids = append(ids, id)
			if id%2 == 1 {
				ids = append(ids, id)
			}
		}
		got, err := s.Jobs(ctx, accounting.JobFilter{JobIDs: ids})
		if err != nil {
			t.Fatalf("%d ids: %v", len(ids), err)
		}
		if len(got) != stored {
			t.Fatalf("got %d jobs, want %d", len(got), stored)
		}
		for i, j := range got {
			if j.JobID != int64(2*i+1) {
				t.Fatalf("job %d is %d, want %d: not in job id order", i, j.JobID, 2*i+1)
			}
		}
	})
}
