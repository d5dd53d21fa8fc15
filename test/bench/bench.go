// Package bench measures schedulers on the rig at scale (issue 4's benchmark): for each
// contender a fresh rig, (a) pods created at full speed while the scheduler runs and (b)
// the same pods as a backlog with the scheduler started afterwards; for Sluice also the
// time to reclaim one GPU for an under-quota queue from a cluster full of another
// queue's preemptible pods.
package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"
	"github.com/sluicehq/sluice/test/cluster"
)

// Contender names accepted in Options.Only.
const (
	Sluice        = "sluice"
	Bare          = "bare"
	KubeScheduler = "kube-scheduler"
)

// Contenders are all contenders, in the order they run.
var Contenders = []string{Sluice, Bare, KubeScheduler}

// Options size one benchmark run.
type Options struct {
	Nodes, GPUsPerNode, Pods int
	// Only lists the contenders to run; empty means all.
	Only []string
	// Creators is how many goroutines create pods at once; default 64.
	Creators int
	// Assets holds the rig's binaries (see cluster.Options.Assets).
	Assets string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// SluiceCommand, when set, runs Sluice as a process of its own, so its CPU and
	// memory figures are its own: the command with the rig's kubeconfig appended must
	// call RunSluiceOn (sluice bench runs itself). Empty runs Sluice in this process,
	// whose figures then include the harness's creates and watch.
	SluiceCommand []string
	// Constrained gives every pod, for every contender, a required node affinity (the
	// pool's partition label, which every node has) and a toleration, as manifests often
	// carry: placement constraints must cost little (docs/placement.md).
	Constrained bool
}

// Result is one contender in one mode.
type Result struct {
	Contender string
	Mode      string // "stream" (a), "backlog" (b) or "reclaim" (see measureReclaim)
	Pods      int
	ToBound   time.Duration // first create (a) or scheduler start (b) to all bound
	ToRunning time.Duration // the same to all Running
	// BindP50 and BindMax are the median and the slowest time from a pod's creation (in
	// backlog mode: from the scheduler's start) to its binding.
	BindP50, BindMax time.Duration
	// Writes are the API server's write requests during the run, by verb and resource,
	// without the benchmark's own pod creates and what kwok and node heartbeats write.
	Writes map[string]float64
	// CPUSeconds is the scheduler's process CPU (one in this process: this whole process):
	// from the first create in a stream, from the start in a backlog, for the samples in
	// a reclaim.
	CPUSeconds float64
	PeakRSSMiB float64
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
		o.Creators = 64
	}
	if len(o.Only) == 0 {
		o.Only = Contenders
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Run benchmarks each chosen contender on its own fresh rig and returns two results per
// contender, stream then backlog, and for Sluice a third, reclaim.
func Run(ctx context.Context, opts Options) ([]Result, error) {
	opts = opts.withDefaults()
	// controller-runtime prints a stack trace to stderr when a client is made before a
	// logger is set; the benchmark reports through Options.Log instead.
	crlog.SetLogger(logr.Discard())
	if opts.Pods > opts.Nodes*opts.GPUsPerNode {
		return nil, fmt.Errorf("bench: %d pods do not fit %d nodes x %d GPUs", opts.Pods, opts.Nodes, opts.GPUsPerNode)
	}
	for _, name := range opts.Only {
		if !slices.Contains(Contenders, name) {
			return nil, fmt.Errorf("bench: unknown contender %q (want one of %v)", name, Contenders)
		}
	}
	var results []Result
	for _, name := range Contenders {
		if !slices.Contains(opts.Only, name) {
			continue
		}
		rs, err := runContender(ctx, opts, name)
		if err != nil {
			return results, fmt.Errorf("bench %s: %w", name, err)
		}
		results = append(results, rs...)
	}
	return results, nil
}

func runContender(ctx context.Context, opts Options, name string) ([]Result, error) {
	fmt.Fprintf(opts.Log, "bench: %s: starting a rig of %d nodes x %d GPUs\n", name, opts.Nodes, opts.GPUsPerNode)
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	rig, err := cluster.Start(startCtx, cluster.Options{Assets: opts.Assets, Log: opts.Log, Benchmark: true, Spec: cluster.Spec{NodePools: []cluster.NodePool{{
		Name: poolName, Count: opts.Nodes, GPUsPerNode: opts.GPUsPerNode, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "128", Memory: "1Ti"}}}})
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
		r, err := h.measure(ctx, mode)
		if err != nil {
			return results, fmt.Errorf("%s: %w", mode, err)
		}
		results = append(results, r)
	}
	if name == Sluice {
		r, err := h.measureReclaim(ctx)
		if err != nil {
			return results, fmt.Errorf("%s: %w", modeReclaim, err)
		}
		results = append(results, r)
	}
	return results, nil
}

// PrintTable writes the results as an aligned table.
func PrintTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "contender\tmode\tpods\tto bound\tbound pods/s\tbind p50\tbind max\tto Running\twrites/pod\tCPU-s\tCPU-s/1000 pods\tpeak RSS MiB\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.0f\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%.0f\t\n", r.Contender, r.Mode, r.Pods,
			r.ToBound.Round(time.Millisecond), r.BoundPerSecond(), r.BindP50.Round(time.Millisecond), r.BindMax.Round(time.Millisecond),
			r.ToRunning.Round(time.Millisecond),
			r.WritesPerPod(), r.CPUSeconds, r.CPUSeconds*1000/float64(r.Pods), r.PeakRSSMiB)
	}
	return tw.Flush()
}
