package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/devrig"
	"github.com/sluicehq/sluice/internal/serverconfig"
	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"
	"github.com/sluicehq/sluice/k8sscheduler/kai"
	"github.com/sluicehq/sluice/slurmapi/cli"
	"github.com/sluicehq/sluice/test/cluster"
)

func init() {
	register(command{name: "dev", summary: "run the local rig (simulated GPU nodes) with the Sluice server and the SQLite ledger", run: runDev})
}

func runDev(args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	specPath := fs.String("spec", "", "cluster spec YAML (node pools); default: h100 4x8 H100-80GB, a100 2x4 A100-40GB")
	assets := fs.String("assets", "", "directory with the rig's binaries (default $SLUICE_ASSETS, then ./bin; build them with `make tools`)")
	state := fs.String("state", ".sluice", "state directory: the rig's files and the server's")
	listen := fs.String("listen", "127.0.0.1:6820", "REST API address")
	seed := fs.String("seed", "examples/site.yaml", "objects applied once the rig is up (partitions, queues, QOS); empty to skip")
	kaiMode := fs.Bool("kai", true, "KAI mode: take pods with schedulerName kai-scheduler and KAI's Queues and PodGroups (installs minimal KAI CRDs)")
	realNodes := fs.Int("real-nodes", 0, "also run this many real nodes (partition \"real\", 2 stand-in GPUs each): a kubelet and containerd on this\nmachine run their jobs in containers, so sluice logs shows real output (needs root and Debian's containerd, runc and\ncontainernetworking-plugins: hack/test-deps.sh installs them)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice dev [flags]\n\nStarts a local control plane (etcd, kube-apiserver, kube-controller-manager,\nkube-scheduler, kwok) with simulated GPU nodes, then the Sluice server against it.\nCtrl-C stops everything.\n\nFlags:")
		fs.PrintDefaults()
	}
	if help, err := cli.ParseFlags(fs, args); help || err != nil {
		return err
	}
	spec := cluster.DefaultSpec()
	if *specPath != "" {
		var err error
		if spec, err = cluster.LoadSpec(*specPath); err != nil {
			return err
		}
	}
	stateDir, err := filepath.Abs(*state)
	if err != nil {
		return err
	}
	opts := cluster.Options{Spec: spec, Dir: filepath.Join(stateDir, "rig"), Assets: *assets, Log: os.Stdout}
	if *realNodes > 0 {
		if opts.Spec, err = devrig.WithRealNodes(spec, *realNodes); err != nil {
			return err
		}
		if opts.SluiceBinary, err = os.Executable(); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	rig, err := cluster.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("%w\n(the rig's binaries come from `make tools`; see --assets)", err)
	}
	defer rig.Stop()
	fmt.Printf("rig: up in %s\n", time.Since(start).Round(100*time.Millisecond))

	if err := crds.Install(ctx, rig.RESTConfig()); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	if *kaiMode {
		if err := kai.InstallCRDs(ctx, rig.RESTConfig()); err != nil {
			return fmt.Errorf("KAI mode: %w", err)
		}
	}
	if *seed != "" {
		n, err := devrig.ApplyFile(ctx, rig.RESTConfig(), *seed)
		if err != nil {
			return fmt.Errorf("seeding %s: %w", *seed, err)
		}
		fmt.Printf("seed: applied %d objects from %s\n", n, *seed)
	}
	if *realNodes > 0 {
		if err := devrig.CreateRealPartition(ctx, rig.RESTConfig(), stateDir); err != nil {
			return err
		}
	}

	// Every user the rig hands a token to runs as their own uid; the rest are refused.
	users, accounts, err := devrig.QueueUsers(ctx, rig.RESTConfig())
	if err != nil {
		fmt.Printf("users: none mapped (%v)\n", err)
	}
	cfg := serverconfig.Default()
	cfg.Slurm.Users = devrig.Users(users)
	// The server has an identity of its own (what only Sluice may write is refused to the
	// admin kubeconfig printed below), and only the API server's client certificate
	// reaches its webhook.
	cfg.Kubeconfig = rig.ServerKubeconfig
	cfg.Webhook.ClientCAFile = rig.WebhookClientCA
	cfg.StateDir = filepath.Join(stateDir, "server")
	cfg.Listen = *listen
	cfg.KAI.Enabled = *kaiMode
	cfg.LeaderElection.Enabled = false // one replica on the rig
	cfg.Webhook.Addr = "127.0.0.1:0"   // any free port; registered by URL
	if *realNodes > 0 {
		// Nothing is pulled on the rig: the real nodes hold the images it built.
		cfg.Slurm.LauncherImage = cluster.SluiceImage
		cfg.Slurm.Filesystems = append(cfg.Slurm.Filesystems, devrig.RealFilesystem(stateDir))
		cfg.Scheduler.GPUReservationImage = cluster.SluiceImage
		// As the chart installs them: reservation pods report their device on themselves.
		cfg.Scheduler.GPUReservationServiceAccount = "sluice-gpu-reservation"
		if err := rig.GPUReservationAccess(ctx, cfg.GPUReservationNamespace(), cfg.Scheduler.GPUReservationServiceAccount); err != nil {
			return err
		}
	}
	logFile, err := os.OpenFile(filepath.Join(stateDir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	srv, err := NewServer(cfg, newLogger(cfg.Log, logFile))
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Run(ctx) }()
	addr := srv.Addr()

	fmt.Printf(`
Sluice is running on a local rig (%d nodes). In another terminal:

  export KUBECONFIG=%s
  kubectl get nodes -L nvidia.com/gpu.product,sluice.dev/partition
  kubectl get sluice -A             # Sluice's queues (sq), partitions, QOS and jobs (pg)
                                    # (KAI mode: plain "queues"/"podgroups" are KAI's kinds)

  export SLUICE_URL=http://%s      # the slurmrestd-compatible REST API
`, opts.Spec.NodeCount(), rig.Kubeconfig, addr)
	user, token, err := devrig.PrintUserTokens(os.Stdout, users, accounts, cfg.Slurm.Users, jwtKeyPath(cfg.StateDir))
	if err != nil {
		fmt.Printf("  (no user tokens: %v)\n", err)
	}
	if token != "" {
		// The page keeps the token in the tab's sessionStorage and drops it from the address.
		fmt.Printf("\n  # the dashboard, as %s:\n  open 'http://%s/ui/?token=%s'\n", user, addr, token)
	}
	if *realNodes > 0 {
		fmt.Printf(`
  # on the real nodes (run from %s, which every job pod mounts at the same path):
  cd %s && sluice sbatch -p real --wrap 'hostname; id; nvidia-smi -L || echo no driver'
  sluice logs 1
`, devrig.SharedDir(stateDir), devrig.SharedDir(stateDir))
	}
	fmt.Printf(`
  sluice sbatch examples/train.sh && sluice squeue

Server log: %s
Press Ctrl-C to stop everything.
`, logFile.Name())

	select {
	case <-ctx.Done():
		fmt.Println("\nstopping...")
		err = <-errc
	case err = <-errc:
	}
	return err
}
