package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/cluster"
)

// The submission benchmark (issue 24): the same load generator sends N Slurm job
// submissions over REST from Clients keep-alive clients to `sluice server` as installed
// (its default configuration on a fresh rig: submit window, submit queue, scheduler,
// recorder, webhook, remediation) and, where the machine has Debian's Slurm packages, to
// real slurmrestd + slurmctld, one after the other in the same run. It reports
// submissions per second, each answer's p50 and p99, and how long after the last
// acknowledgement every job was visible to the scheduler and in squeue.

// Job kinds a submission run may send.
const (
	// KindHeld jobs are submitted held (sbatch -H): nothing starts them.
	KindHeld = "held"
	// KindRunnable jobs may start: a few do (the rig's one node has 8 GPUs, each job asks
	// one; slurmctld's nodes have no slurmd and stay down), the rest wait for resources.
	KindRunnable = "runnable"
)

// Submission targets.
const (
	TargetSluice     = "sluice"
	TargetSlurmrestd = "slurmrestd"
)

// SubmitOptions size a submission benchmark.
type SubmitOptions struct {
	// Jobs are the submissions per run, one run per entry and kind; default 5000.
	Jobs []int
	// Kinds are KindHeld and/or KindRunnable; default both.
	Kinds []string
	// Clients send at once, each on its keep-alive connection; default 16.
	Clients int
	// Slurmrestd: "auto" runs real slurmrestd beside Sluice where the machine has the
	// packages (else says it skipped it), "off" never, "on" fails without them.
	Slurmrestd string
	// Assets, SluiceBinary and ServerCommand are as in Options.
	Assets        string
	SluiceBinary  string
	ServerCommand []string
	// PodGroupPerJob runs the server with rest.pendingInBatches false (the submit queue
	// writes every job's PodGroup); the default configuration keeps pending jobs in their
	// submit batches.
	PodGroupPerJob bool
	// VisibleLimit bounds the wait for every job to be visible; default 10 minutes.
	VisibleLimit time.Duration
	Log          io.Writer
}

// SubmitResult is one target, kind and size.
type SubmitResult struct {
	Target     string
	Kind       string
	Jobs       int
	Acked      int
	Failed     int
	FirstError string
	// Took is the first submission sent to the last answered.
	Took          time.Duration
	P50, P99, Max time.Duration
	// ToScheduler and ToSqueue are the last acknowledgement to every acknowledged job
	// visible to the scheduler (Sluice: counted in its pending-jobs gauge or bound;
	// slurmctld: in its memory when it answers, so 0) and listed by GET jobs; -1 when
	// not within SubmitOptions.VisibleLimit.
	ToScheduler, ToSqueue time.Duration
	// CPUSeconds is the server's process CPU (Sluice) or slurmctld's and slurmrestd's
	// from the first submission until every job was visible.
	CPUSeconds float64
	// APIServerCPU is kube-apiserver's CPU over the same window; Writes its write
	// requests by verb and resource (Sluice only).
	APIServerCPU float64
	Writes       map[string]float64
	Load         string
}

// Rate is acknowledged submissions per second.
func (r SubmitResult) Rate() float64 { return float64(r.Acked) / r.Took.Seconds() }

func (o SubmitOptions) withDefaults() SubmitOptions {
	if len(o.Jobs) == 0 {
		o.Jobs = []int{5000}
	}
	if len(o.Kinds) == 0 {
		o.Kinds = []string{KindHeld, KindRunnable}
	}
	if o.Clients <= 0 {
		o.Clients = 16
	}
	if o.Slurmrestd == "" {
		o.Slurmrestd = "auto"
	}
	if o.VisibleLimit <= 0 {
		o.VisibleLimit = 10 * time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// RunSubmit runs, for each size and kind, slurmrestd's run (where it runs) and then
// Sluice's on a fresh rig, and returns their results in that order.
func RunSubmit(ctx context.Context, opts SubmitOptions) ([]SubmitResult, error) {
	opts = opts.withDefaults()
	crlog.SetLogger(logr.Discard())
	for _, k := range opts.Kinds {
		if k != KindHeld && k != KindRunnable {
			return nil, fmt.Errorf("bench: unknown kind %q (want %s or %s)", k, KindHeld, KindRunnable)
		}
	}
	if opts.SluiceBinary == "" && len(opts.ServerCommand) == 0 {
		return nil, fmt.Errorf("bench: the submission benchmark needs SubmitOptions.SluiceBinary")
	}
	withSlurm := false
	switch missing := slurmMissing(); {
	case opts.Slurmrestd == "off":
	case missing == "" && opts.Slurmrestd != "off":
		withSlurm = true
	case opts.Slurmrestd == "on":
		return nil, fmt.Errorf("bench: slurmrestd: this machine lacks %s (make bench-submit-deps installs Debian's packages)", missing)
	default:
		fmt.Fprintf(opts.Log, "bench: slurmrestd skipped: this machine lacks %s (make bench-submit-deps installs Debian's packages)\n", missing)
	}
	var results []SubmitResult
	for _, n := range opts.Jobs {
		for _, kind := range opts.Kinds {
			if withSlurm {
				r, err := submitToSlurm(ctx, opts, n, kind)
				results = append(results, r)
				if err != nil {
					return results, fmt.Errorf("slurmrestd %s %d: %w", kind, n, err)
				}
				logSubmit(opts.Log, r)
			}
			r, err := submitToSluice(ctx, opts, n, kind)
			results = append(results, r)
			if err != nil {
				return results, fmt.Errorf("sluice %s %d: %w", kind, n, err)
			}
			logSubmit(opts.Log, r)
		}
	}
	return results, nil
}

func logSubmit(w io.Writer, r SubmitResult) {
	fmt.Fprintf(w, "bench: %s %s %d: %d acknowledged (%d failed) in %s: %.0f/s, p50 %s p99 %s; visible to the scheduler %s, in squeue %s after the last; load %s\n",
		r.Target, r.Kind, r.Jobs, r.Acked, r.Failed, r.Took.Round(time.Millisecond), r.Rate(), r.P50.Round(10*time.Microsecond),
		r.P99.Round(10*time.Microsecond), r.ToScheduler.Round(time.Millisecond), r.ToSqueue.Round(time.Millisecond), r.Load)
	if r.FirstError != "" {
		fmt.Fprintf(w, "bench: %s %s %d: first failure: %s\n", r.Target, r.Kind, r.Jobs, r.FirstError)
	}
}

// fill copies what a load measured into r.
func (r *SubmitResult) fill(l submitLoad) {
	r.Acked, r.Failed, r.FirstError, r.Took = l.acked, l.failed, l.firstErr, l.took
	r.P50, r.P99, r.Max = l.quantile(0.5), l.quantile(0.99), l.quantile(1)
}

// submitToSlurm is one run against a fresh slurmctld and slurmrestd.
func submitToSlurm(ctx context.Context, opts SubmitOptions, n int, kind string) (_ SubmitResult, err error) {
	r := SubmitResult{Target: TargetSlurmrestd, Kind: kind, Jobs: n}
	dir, err := os.MkdirTemp("", "bench-slurm-")
	if err != nil {
		return r, err
	}
	// slurmrestd runs as nobody and reads slurm.conf there; the keys stay 0600.
	if err := os.Chmod(dir, 0o755); err != nil {
		return r, err
	}
	defer func() {
		if err == nil {
			os.RemoveAll(dir) // kept for its logs when the run failed
		}
	}()
	fmt.Fprintf(opts.Log, "bench: slurmrestd: starting munged, slurmctld and slurmrestd in %s\n", dir)
	s, err := startSlurmrestd(ctx, dir)
	if err != nil {
		return r, err
	}
	defer s.stop()
	cpu0 := s.cpuSeconds()
	load := sendSubmissions(ctx, s.target(kind == KindHeld), n, opts.Clients)
	r.fill(load)
	r.ToScheduler = 0 // slurmctld answers once the job is in its memory
	r.ToSqueue = waitVisible(ctx, opts.VisibleLimit, func() bool {
		got, err := countJobs(ctx, s.url+"/slurm/"+slurmVersion+"/jobs", s.headers())
		return err == nil && got >= load.acked
	})
	r.CPUSeconds, r.Load = s.cpuSeconds()-cpu0, loadAverage()
	return r, nil
}

// benchUser submits Sluice's jobs; its account is the queue benchQueue.
const benchUser = "bench"

// servingRE finds the REST address in the server's "serving" log line.
var servingRE = regexp.MustCompile(`msg=serving addr=(\S+)`)

// submitToSluice is one run against `sluice server` on a fresh rig of one 8-GPU node.
func submitToSluice(ctx context.Context, opts SubmitOptions, n int, kind string) (SubmitResult, error) {
	r := SubmitResult{Target: TargetSluice, Kind: kind, Jobs: n}
	fmt.Fprintf(opts.Log, "bench: sluice: starting a rig\n")
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	rig, err := cluster.Start(startCtx, cluster.Options{Assets: opts.Assets, Log: opts.Log, Benchmark: true, Spec: cluster.Spec{NodePools: []cluster.NodePool{{
		Name: poolName, Count: 1, GPUsPerNode: 8, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "128", Memory: "1Ti"}}}})
	if err != nil {
		return r, err
	}
	defer rig.Stop()
	if err := crds.Install(ctx, rig.RESTConfig()); err != nil {
		return r, fmt.Errorf("install CRDs: %w", err)
	}
	h, err := newHarness(rig, Options{Assets: opts.Assets, SluiceBinary: opts.SluiceBinary, ServerCommand: opts.ServerCommand, Log: opts.Log}, Sluice)
	if err != nil {
		return r, err
	}
	if err := h.submitSite(ctx, benchUser); err != nil {
		return r, err
	}
	server := h.sched.(*serverProcess)
	// The setting changed from the defaults: the per-user submission rate limit (100/s,
	// bursts of 500) is lifted for the benchmark's user, as a site does for a workflow
	// engine's account; slurmctld limits no rate unless configured to.
	rest := map[string]any{"submitRateLimit": map[string]any{"users": map[string]any{benchUser: map[string]any{"perSecond": 0}}}}
	if opts.PodGroupPerJob {
		rest["pendingInBatches"] = false
	}
	// Its user has a uid, as every user must where unmapped users are refused (the default).
	slurm := map[string]any{"users": map[string]any{benchUser: map[string]any{"uid": 1001, "gid": 1001}}}
	server.extra = map[string]any{"rest": rest, "slurm": slurm}
	usage, err := server.start(ctx)
	if err != nil {
		return r, err
	}
	defer server.stop()
	addr, err := serverAddr(ctx, server.logPath)
	if err != nil {
		return r, err
	}
	token, err := benchToken(filepath.Join(server.state, "jwt.key"))
	if err != nil {
		return r, err
	}
	base := "http://" + addr
	// The scheduler has run a cycle: its informers are synced, so what follows measures
	// submissions, not the server's start.
	if err := poll(ctx, func() bool { m, err := scrapeScheduler(ctx, base); return err == nil && m.cycles > 0 }); err != nil {
		return r, fmt.Errorf("the server's scheduler ran no cycle: %w", err)
	}
	before, err := scrapeAPIServer(ctx, h.kube)
	if err != nil {
		return r, err
	}
	cpu0, _ := usage()
	headers := map[string]string{"X-SLURM-USER-TOKEN": token}
	load := sendSubmissions(ctx, sluiceTarget(base, headers, kind == KindHeld), n, opts.Clients)
	r.fill(load)
	visible := make(chan time.Duration, 1)
	go func() {
		visible <- waitVisible(ctx, opts.VisibleLimit, func() bool {
			m, err := scrapeScheduler(ctx, base)
			return err == nil && m.pending+m.bound >= float64(load.acked)
		})
	}()
	r.ToSqueue = waitVisible(ctx, opts.VisibleLimit, func() bool {
		got, err := countJobs(ctx, base+"/slurm/v0.0.45/jobs", headers)
		return err == nil && got >= load.acked
	})
	r.ToScheduler = <-visible
	cpu1, _ := usage()
	after, err := scrapeAPIServer(ctx, h.kube)
	if err != nil {
		return r, err
	}
	r.CPUSeconds, r.APIServerCPU, r.Writes, r.Load = cpu1-cpu0, after.cpu-before.cpu, after.writes.minus(before.writes), loadAverage()
	return r, nil
}

// sluiceTarget is the benchmark's submission in Sluice's newest dialect: the same script,
// name and hold, with the account, partition and one GPU a Sluice site asks for.
func sluiceTarget(base string, headers map[string]string, held bool) submitTarget {
	return submitTarget{url: base + "/slurm/v0.0.45/job/submit", headers: headers, body: func(i int) []byte {
		return mustJSON(map[string]any{"script": benchScript, "job": map[string]any{
			"name": fmt.Sprintf("bench-%d", i), "current_working_directory": "/tmp", "hold": held,
			"account": benchQueue, "partition": poolName, "tres_per_node": "gres/gpu:1",
			"environment": []string{"PATH=/bin:/usr/bin"}}})
	}}
}

// serverAddr waits for the server's "serving" log line and returns its address.
func serverAddr(ctx context.Context, logPath string) (string, error) {
	var addr string
	err := poll(ctx, func() bool {
		data, _ := os.ReadFile(logPath)
		if m := servingRE.FindSubmatch(data); m != nil {
			addr = string(m[1])
		}
		return addr != ""
	})
	if err != nil {
		return "", fmt.Errorf("the server never logged its address (%s): %w", logPath, err)
	}
	return addr, nil
}

// benchToken mints the benchmark user's token with the server's key (created here when
// the server has not yet).
func benchToken(keyFile string) (string, error) {
	key, err := slurmapi.LoadOrCreateKey(keyFile)
	if err != nil {
		return "", err
	}
	return slurmapi.MintToken(key, benchUser, 24*time.Hour)
}

// waitVisible polls done until it holds and returns how long that took, or -1 after limit.
func waitVisible(ctx context.Context, limit time.Duration, done func() bool) time.Duration {
	start := time.Now()
	for !done() {
		if time.Since(start) > limit || ctx.Err() != nil {
			return -1
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}
