package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluicehq/sluice/slurmapi/cli"
	"github.com/sluicehq/sluice/test/bench"
)

func init() {
	register(command{name: "bench", summary: "benchmark Sluice as installed, a bare binder and kube-scheduler on fresh rigs", run: runBench})
}

func runBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	nodes := fs.Int("nodes", 500, "simulated nodes per rig")
	gpus := fs.Int("gpus", 8, "GPUs per node")
	pods := fs.Int("pods", 4000, "single-GPU pods per run")
	only := fs.String("only", strings.Join(bench.Contenders, ","), "contenders to run, comma-separated, of "+strings.Join(bench.AllContenders, ","))
	modes := fs.String("modes", "stream", "modes to run, comma-separated, of "+strings.Join(bench.AllModes, ","))
	repeats := fs.Int("repeats", 3, "runs of each stream and backlog per contender (the summary gives medians)")
	verbose := fs.Bool("v", false, "print the rigs' progress and each run's writes")
	scale := fs.Bool("scale", false, "the scale run: 2000 nodes and 16,000 pods unless --nodes and --pods say otherwise (e.g. --scale --nodes 5000 --pods 40000)")
	constrained := fs.Bool("constrained", false, "give every pod a required node affinity and a toleration")
	claims := fs.Bool("claims", false, "publish the GPUs through Dynamic Resource Allocation and have every pod ask for its GPU through a claim from a ResourceClaimTemplate instead of nvidia.com/gpu; the bare binder, which allocates nothing, is left out unless --only names it, which is refused")
	clusterIDs := fs.Bool("cluster-identities", true, "run sluice server as the chart's ServiceAccount (its RBAC and FlowSchema, rendered by helm from charts/sluice) and kube-scheduler as system:kube-scheduler on an API server with its default request limits, so API Priority and Fairness treats both as in a cluster; false runs both with the rig's credentials, which it exempts")
	runSluiceOn := fs.String("run-sluice-on", "", "internal: run Sluice's scheduler and pod grouper against this kubeconfig until interrupted; the benchmark runs its sluice-scheduler contender so, in a process of its own")
	runServerArgs := fs.Bool("run-server", false, "internal: run `sluice server` with the arguments that follow the flags; the benchmark runs its Sluice contenders so with --cpuprofile")
	submit := fs.Bool("submit", false, "the submission benchmark instead (issue 24): Slurm jobs over REST to sluice server and, where installed, real slurmrestd")
	jobs := fs.String("jobs", "5000", "with --submit: submissions per run, comma-separated sizes")
	kinds := fs.String("kinds", bench.KindHeld+","+bench.KindRunnable, "with --submit: job kinds, comma-separated, of held,runnable")
	clients := fs.Int("clients", 16, "with --submit: clients sending at once, each on a keep-alive connection")
	inBatches := fs.Bool("pending-in-batches", true, "with --submit: run the server with rest.pendingInBatches, the default (pending jobs stay in their submit batch); false writes a PodGroup per job")
	slurmrestd := fs.String("slurmrestd", "auto", "with --submit: run real slurmrestd beside Sluice: auto (where the packages are installed), on, off")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the harness (with the bare binder) to this file, of each sluice server process to this file with .server.PID appended and of each sluice-scheduler process with .sluice.PID")
	if help, err := cli.ParseFlags(fs, args); help || err != nil {
		return err
	}
	if *runServerArgs {
		if *cpuProfile != "" {
			*cpuProfile += "." + strconv.Itoa(os.Getpid())
		}
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
		return runServer(fs.Args())
	}
	if fs.NArg() > 0 {
		return cli.UsageError{Msg: fmt.Sprintf("bench: unexpected argument %q", fs.Arg(0))}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *scale {
		if !set["nodes"] {
			*nodes = 2000
		}
		if !set["pods"] {
			*pods = 16000
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *runSluiceOn != "" {
		if *cpuProfile != "" {
			*cpuProfile += "." + strconv.Itoa(os.Getpid())
		}
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
		return bench.RunSluiceOn(ctx, *runSluiceOn)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if *submit {
		return runSubmitBench(ctx, self, *jobs, *kinds, *clients, *slurmrestd, *cpuProfile, *verbose, *inBatches)
	}
	opts := bench.Options{Nodes: *nodes, GPUsPerNode: *gpus, Pods: *pods, Only: strings.Split(*only, ","),
		Modes: strings.Split(*modes, ","), Repeats: *repeats, SluiceBinary: self,
		SluiceCommand: []string{self, "bench", "--run-sluice-on"}, Constrained: *constrained, ClusterIdentities: *clusterIDs, Claims: *claims}
	if !set["only"] {
		opts.Only = nil // the default contenders, which depend on --claims
	}
	if *cpuProfile != "" {
		opts.SluiceCommand = []string{self, "bench", "--cpuprofile", *cpuProfile + ".sluice", "--run-sluice-on"}
		opts.ServerCommand = []string{self, "bench", "--cpuprofile", *cpuProfile + ".server", "--run-server", "--"}
	}
	if *verbose {
		opts.Log = os.Stderr
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	results, err := bench.Run(ctx, opts)
	if len(results) > 0 {
		if perr := bench.PrintTable(os.Stdout, results); perr != nil {
			return perr
		}
	}
	return err
}

// startCPUProfile writes this process's CPU profile to path until the returned stop is
// called; an empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// runSubmitBench runs the submission benchmark and prints its table.
func runSubmitBench(ctx context.Context, self, jobs, kinds string, clients int, slurmrestd, cpuProfile string, verbose, inBatches bool) error {
	opts := bench.SubmitOptions{Kinds: strings.Split(kinds, ","), Clients: clients, Slurmrestd: slurmrestd, SluiceBinary: self, PodGroupPerJob: !inBatches}
	for _, f := range strings.Split(jobs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return cli.UsageError{Msg: fmt.Sprintf("bench: --jobs %q: want positive numbers, comma-separated", jobs)}
		}
		opts.Jobs = append(opts.Jobs, n)
	}
	if slurmrestd != "auto" && slurmrestd != "on" && slurmrestd != "off" {
		return cli.UsageError{Msg: fmt.Sprintf("bench: --slurmrestd %q: want auto, on or off", slurmrestd)}
	}
	if cpuProfile != "" {
		opts.ServerCommand = []string{self, "bench", "--cpuprofile", cpuProfile + ".server", "--run-server", "--"}
	}
	if verbose {
		opts.Log = os.Stderr
	}
	results, err := bench.RunSubmit(ctx, opts)
	if len(results) > 0 {
		if perr := bench.PrintSubmitTable(os.Stdout, results); perr != nil {
			return perr
		}
	}
	return err
}
