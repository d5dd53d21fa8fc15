package store

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// benchDir holds the 1M-job ledger, built once per `go test -bench` run.
var (
	benchDir     string
	benchOnce    sync.Once
	benchLedger  *SQLStore
	benchLoadErr error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchLedger != nil {
		benchLedger.Close()
	}
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchJobs is how many jobs the sacct benchmark records
// (SLUICE_BENCH_JOBS, default one million).
func benchJobs() int {
	if n, err := strconv.Atoi(os.Getenv("SLUICE_BENCH_JOBS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// syntheticJob spreads n jobs over 2026 across 20 accounts and 200 users,
// lasting a minute to a day, holding half a GPU to eight. Like real job ids,
// ids grow with submit time.
func syntheticJob(r *rand.Rand, id int64, n int) accounting.Job {
	year := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	submit := year.Add((365*24*time.Hour)/time.Duration(n)*time.Duration(id-1) + time.Duration(r.Intn(3600))*time.Second)
	start := submit.Add(time.Duration(r.Intn(3600)) * time.Second)
	end := start.Add(time.Duration(60+r.Intn(86400)) * time.Second)
	gpus := []float64{0.5, 1, 2, 4, 8}[r.Intn(5)]
	user := r.Intn(200)
	tres := accounting.TRES{CPUs: int64(gpus*8) + 1, MemMB: 65536, GPUs: gpus, Nodes: 1}
	return accounting.Job{JobID: id, ArrayTaskID: -1, Name: "train", User: fmt.Sprintf("user-%03d", user),
		Account: fmt.Sprintf("acct-%02d", user%20), Partition: "h100", QOS: "normal", Origin: accounting.OriginSlurm,
		Submit: submit, Eligible: submit, Start: start, End: end, State: accounting.StateCompleted,
		Requested: tres, Allocated: tres, NodeList: "gpu-01"}
}

func loadBenchLedger(b *testing.B) *SQLStore {
	benchOnce.Do(func() {
		ctx := context.Background()
		if benchDir, benchLoadErr = os.MkdirTemp("", "sluice-ledger-bench-"); benchLoadErr != nil {
			return
		}
		if benchLedger, benchLoadErr = Open(ctx, filepath.Join(benchDir, "ledger.db")); benchLoadErr != nil {
			return
		}
		r := rand.New(rand.NewSource(42))
		n := benchJobs()
		began := time.Now()
		const batch = 20_000
		for first := 1; first <= n; first += batch {
			jobs := make([]accounting.Job, 0, batch)
			for id := first; id < first+batch && id <= n; id++ {
				jobs = append(jobs, syntheticJob(r, int64(id), n))
			}
			if benchLoadErr = benchLedger.UpsertJobs(ctx, jobs); benchLoadErr != nil {
				return
			}
		}
		fmt.Fprintf(os.Stderr, "bench ledger: %d jobs loaded in %s\n", n, time.Since(began).Round(time.Millisecond))
	})
	if benchLoadErr != nil {
		b.Fatal(benchLoadErr)
	}
	return benchLedger
}

// BenchmarkSacctAccountMonth is `sacct -A acct-07 -S 2026-06-01 -E
// 2026-07-01` over the million-job ledger (target < 200 ms).
func BenchmarkSacctAccountMonth(b *testing.B) {
	s := loadBenchLedger(b)
	f := accounting.JobFilter{Accounts: []string{"acct-07"},
		Start: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)}
	var rows int
	cpu := cpuTime()
	for b.Loop() {
		jobs, err := s.Jobs(context.Background(), f)
		if err != nil {
			b.Fatal(err)
		}
		rows = len(jobs)
	}
	b.ReportMetric(float64(rows), "jobs/query")
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU this process has used, user and system. On a machine
// shared with other builds, wall time per op also counts the waiting for a
// core; CPU per op is what the query costs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIngestTransitions records batches of 1000 transitions (250 jobs
// going PENDING, RUNNING, COMPLETED plus a requeue for one in five) the way
// the recorder does, one transaction per batch (target >= 5000/s).
func BenchmarkIngestTransitions(b *testing.B) {
	backends := map[string]func(testing.TB) *SQLStore{"sqlite": openSQLite, "postgres": openPostgres}
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			s := backends[name](b)
			ctx := context.Background()
			r := rand.New(rand.NewSource(7))
			next := int64(1)
			total := 0
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				jobs := make([]accounting.Job, 0, 250)
				var ts []accounting.Transition
				for len(ts) < 1000 {
					j := syntheticJob(r, next, 100_000)
					next++
					j.State = accounting.StatePending
					jobs = append(jobs, j)
					ts = append(ts, accounting.Transition{JobID: j.JobID, At: j.Submit, State: accounting.StatePending},
						accounting.Transition{JobID: j.JobID, At: j.Start, State: accounting.StateRunning},
						accounting.Transition{JobID: j.JobID, At: j.End, State: accounting.StateCompleted})
					if j.JobID%5 == 0 {
						ts = append(ts, accounting.Transition{JobID: j.JobID, At: j.Start.Add(time.Second), State: accounting.StateRequeued})
					}
				}
				if err := s.UpsertJobs(ctx, jobs); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				began := time.Now()
				if err := s.RecordTransitions(ctx, ts); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(began)
				total += len(ts)
			}
			b.ReportMetric(float64(total)/elapsed.Seconds(), "transitions/s")
		})
	}
}
