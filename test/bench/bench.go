// Package bench measures schedulers on the rig at scale (issues 4 and 19): each contender
// gets a fresh rig; on it (a) pods are created at full speed while the scheduler runs
// (stream), Options.Repeats times; optionally (b) the same pods as a backlog with the
// scheduler started afterwards and, for Sluice, (c) the time to reclaim one GPU for an
// under-quota queue from a cluster full of another queue's preemptible pods.
//
// Sluice runs as installed: the `sluice server` process with its default configuration
// (admission webhook, ledger and recorder, remediation, pod grouper), pods as users write
// them. The older contender "sluice-scheduler" runs only the scheduler and the pod grouper
// and has the harness write what the webhook would.
package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"
	"github.com/sluicehq/sluice/test/cluster"
)

// Contender names accepted in Options.Only.
const (
	// Sluice is `sluice server` as installed (serverProcess).
	Sluice = "sluice"
	// SluiceNoWebhook is `sluice server` with its admission webhook (and the admission
	// policy it registers) turned off, the harness writing what the webhook would: what
	// the webhook's round trip costs is the difference from Sluice.
	SluiceNoWebhook = "sluice-no-webhook"
	// SluiceScheduler is Sluice's scheduler and pod grouper alone, the harness writing
	// what the webhook would (sluiceContender).
	SluiceScheduler = "sluice-scheduler"
	Bare            = "bare"
	KubeScheduler   = "kube-scheduler"
)

// Contenders are the contenders a run has by default, in the order they run.
var Contenders = []string{Sluice, Bare, KubeScheduler}

// AllContenders are every contender Options.Only may name.
var AllContenders = []string{Sluice, SluiceNoWebhook, SluiceScheduler, Bare, KubeScheduler}

// Modes a run may measure.
const (
	modeStream  = "stream"
	modeBacklog = "backlog"
	modeReclaim = "reclaim"
)

// AllModes are every mode Options.Modes may name, in the order they run.
var AllModes = []string{modeStream, modeBacklog, modeReclaim}

// Options size one benchmark run.
type Options struct {
	Nodes, GPUsPerNode, Pods int
	// Only lists the contenders to run; empty means Contenders.
	Only []string
	// Modes lists the modes to run; empty means only the stream. Reclaim is measured for
	// Sluice's contenders only.
	Modes []string
	// Repeats is how many times each stream and backlog runs on the contender's rig;
	// default 3 (the summary gives medians).
	Repeats int
	// Creators is how many goroutines create pods at once; default 100.
	Creators int
	// Assets holds the rig's binaries (see cluster.Options.Assets).
	Assets string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// SluiceBinary is the sluice binary the Sluice contenders run as `sluice server`.
	SluiceBinary string
	// ServerCommand, when set, runs `sluice server` instead: the command with the
	// server's flags appended (sluice bench runs itself so to profile the server).
	ServerCommand []string
	// SluiceCommand, when set, runs the sluice-scheduler contender as a process of its
	// own, so its CPU and memory figures are its own: the command with the rig's
	// kubeconfig appended must call RunSluiceOn (sluice bench runs itself). Empty runs it
	// in this process, whose figures then include the harness's creates and watch.
	SluiceCommand []string
	// Constrained gives every pod, for every contender, a required node affinity (the
	// pool's partition label, which every node has) and a toleration, as manifests often
	// carry: placement constraints must cost little (docs/placement.md).
	Constrained bool
	// ClusterIdentities runs Sluice as the chart's ServiceAccount (its RBAC and
	// FlowSchema) and kube-scheduler as system:kube-scheduler on an API server with its
	// default request limits, so API Priority and Fairness treats both as in a cluster
	// (identities.go); otherwise both use credentials it exempts. The bare binder and
	// the harness keep the admin's.
	ClusterIdentities bool
	// Claims publishes the pool's GPUs through Dynamic Resource Allocation (the rig's
	// stand-in driver, class cluster.DeviceClassGPU) instead of as nvidia.com/gpu, and
	// every pod asks for its GPU through a claim made from a ResourceClaimTemplate. The
	// bare binder allocates nothing, so it cannot be run so; without Only, it is left out.
	Claims bool
}

// Result is one contender in one mode, one repeat.
type Result struct {
	Contender string
	Mode      string // modeStream, modeBacklog or modeReclaim (see measureReclaim)
	Repeat    int    // 1-based
	Pods      int
	ToBound   time.Duration // first create (stream) or scheduler start (backlog) to all bound
	ToRunning time.Duration // the same to all Running
	// Created is the stream's first create to its last create's answer: what admission
	// costs the creators.
	Created time.Duration
	// BindP50, BindP99 and BindMax are the median, 99th percentile and slowest time from
	// a pod's creation (in backlog mode: from the scheduler's start) to its binding.
	BindP50, BindP99, BindMax time.Duration
	// Writes are the API server's write requests during the run, by verb and resource,
	// without the benchmark's own pod creates and what kwok and node heartbeats write.
	Writes map[string]float64
	// CPUSeconds is the scheduler's process CPU (for one in this process: this whole
	// process) over the run: from the first create, in a backlog too (Sluice's webhook
	// admits it), without the process's start-up; for the samples in a reclaim.
	CPUSeconds float64
	PeakRSSMiB float64
	// APIServerCPU is kube-apiserver's CPU seconds over the same window
	// (process_cpu_seconds_total), the harness's creates and watch included.
	APIServerCPU float64
	// Load is the machine's 1-minute load average at the end of the run.
	Load string
}

// BoundPerSecond is pods bound per second.
func (r Result) BoundPerSecond() float64 { return float64(r.Pods) / r.ToBound.Seconds() }

// WritesPerPod is all counted writes divided by the pods.
func (r Result) WritesPerPod() float64 {
	var n float64
	for _, v := range r.Writes {
		n += v
	}
	return n / float64(r.Pods)
}

func (o Options) withDefaults() Options {
	if o.Creators <= 0 {
		o.Creators = 100
	}
	if o.Repeats <= 0 {
		o.Repeats = 3
	}
	if len(o.Only) == 0 {
		o.Only = Contenders
		if o.Claims {
			o.Only = slices.DeleteFunc(slices.Clone(Contenders), func(c string) bool { return c == Bare })
		}
	}
	if len(o.Modes) == 0 {
		o.Modes = []string{modeStream}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Run benchmarks each chosen contender on its own fresh rig and returns its results:
// Repeats streams, then Repeats backlogs, then a reclaim, as Options.Modes asks.
func Run(ctx context.Context, opts Options) ([]Result, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err // before the process-wide logger below is touched
	}
	// controller-runtime prints a stack trace to stderr when a client is made before a
	// logger is set; the benchmark reports through Options.Log instead.
	crlog.SetLogger(logr.Discard())
	var results []Result
	for _, name := range AllContenders {
		if !slices.Contains(opts.Only, name) {
			continue
		}
		rs, err := runContender(ctx, opts, name)
		results = append(results, rs...)
		if err != nil {
			return results, fmt.Errorf("bench %s: %w", name, err)
		}
	}
	return results, nil
}

// validate refuses options a run cannot honour, before any rig starts.
func (o Options) validate() error {
	if o.Pods > o.Nodes*o.GPUsPerNode {
		return fmt.Errorf("bench: %d pods do not fit %d nodes x %d GPUs", o.Pods, o.Nodes, o.GPUsPerNode)
	}
	for _, name := range o.Only {
		if !slices.Contains(AllContenders, name) {
			return fmt.Errorf("bench: unknown contender %q (want one of %v)", name, AllContenders)
		}
	}
	for _, m := range o.Modes {
		if !slices.Contains(AllModes, m) {
			return fmt.Errorf("bench: unknown mode %q (want one of %v)", m, AllModes)
		}
	}
	if (slices.Contains(o.Only, Sluice) || slices.Contains(o.Only, SluiceNoWebhook)) && o.SluiceBinary == "" && len(o.ServerCommand) == 0 {
		return fmt.Errorf("bench: contenders %s and %s need Options.SluiceBinary", Sluice, SluiceNoWebhook)
	}
	if o.Claims && slices.Contains(o.Only, Bare) {
		// It would bind every pod with its claim unallocated: a pod no driver could
		// start, at a rate no scheduler that allocates could reach.
		return fmt.Errorf("bench: contender %s binds without allocating resource claims; leave it out with claims", Bare)
	}
	return nil
}

func runContender(ctx context.Context, opts Options, name string) ([]Result, error) {
	through := "nvidia.com/gpu"
	if opts.Claims {
		through = "DRA"
	}
	fmt.Fprintf(opts.Log, "bench: %s: starting a rig of %d nodes x %d GPUs (%s)\n", name, opts.Nodes, opts.GPUsPerNode, through)
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	rig, err := cluster.Start(startCtx, cluster.Options{Assets: opts.Assets, Log: opts.Log, Benchmark: true, DefaultRequestLimits: opts.ClusterIdentities, Spec: cluster.Spec{NodePools: []cluster.NodePool{{
		Name: poolName, Count: opts.Nodes, GPUsPerNode: opts.GPUsPerNode, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "128", Memory: "1Ti",
		DRA: opts.Claims}}}})
	if err != nil {
		return nil, err
	}
	defer rig.Stop()
	if err := crds.Install(ctx, rig.RESTConfig()); err != nil {
		return nil, fmt.Errorf("install CRDs: %w", err)
	}
	h, err := newHarness(rig, opts, name)
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, mode := range []string{modeStream, modeBacklog} {
		if !slices.Contains(opts.Modes, mode) {
			continue
		}
		for rep := 1; rep <= opts.Repeats; rep++ {
			r, err := h.measure(ctx, mode, rep)
			if err != nil {
				return results, fmt.Errorf("%s %d: %w", mode, rep, err)
			}
			results = append(results, r)
		}
	}
	if slices.Contains(opts.Modes, modeReclaim) && isSluice(name) {
		r, err := h.measureReclaim(ctx)
		if err != nil {
			return results, fmt.Errorf("%s: %w", modeReclaim, err)
		}
		results = append(results, r)
	}
	return results, nil
}

// isSluice says whether a contender is one of Sluice's.
func isSluice(name string) bool {
	return name == Sluice || name == SluiceNoWebhook || name == SluiceScheduler
}
