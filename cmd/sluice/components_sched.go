package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/dashboard"
	"github.com/sluicehq/sluice/accounting/metrics"
	"github.com/sluicehq/sluice/accounting/recorder"
	"github.com/sluicehq/sluice/accounting/store"
	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/podgrouper"
	"github.com/sluicehq/sluice/k8sscheduler/resvcontroller"
	"github.com/sluicehq/sluice/k8sscheduler/scheduler"
	"github.com/sluicehq/sluice/remediation/controller"
	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/kube"
)

// addScheduler runs the GPU scheduler and the Slurm job lifecycle on the
// leader. Slurm jobs get their pods from the Slurm API's pod factory.
func (s *Server) addScheduler() error {
	sc := s.cfg.Scheduler
	filesystems, err := s.cfg.Slurm.PodFilesystems() // valid: serverconfig.Load checked
	if err != nil {
		return err
	}
	factory, err := kube.NewPodFactory(s.restConfig, kube.PodOptions{Filesystems: filesystems, Users: s.users,
		DefaultImage: s.cfg.Slurm.DefaultImage, LauncherImage: s.cfg.Slurm.LauncherImageFor(version), LaunchKeySeed: s.launchSeed,
		ClusterDomain: s.cfg.Slurm.ClusterDomain, InactiveLimit: time.Duration(s.cfg.Slurm.InactiveLimit)})
	if err != nil {
		return err
	}
	// Fair share is corrected by the ledger's decayed usage (addAccounting ran first).
	usage := recorder.UsageSource{Store: s.ledger, Config: accounting.UsageConfig{HalfLife: time.Duration(s.cfg.Accounting.HalfLife)}}
	grouper, err := podgrouper.NewController(s.restConfig, s.schedulerNames())
	if err != nil {
		return fmt.Errorf("pod grouper: %w", err)
	}
	grouper.WithJobIDs(s.jobIDs.Next)  // manifest workloads are jobs in squeue and sacct (addREST ran first)
	s.podObserver = grouper.Observer() // the shared pod informer feeds it (addInformers)
	// With rest.pendingInBatches, pending Slurm jobs are read from the submit batches in
	// the server's namespace: a job's PodGroup is written when it starts
	// (docs/architecture.md).
	batchNamespace := ""
	if s.cfg.REST.PendingInBatches {
		batchNamespace = s.cfg.LeaderElection.Namespace
	}
	sched, err := scheduler.New(scheduler.Config{
		SubmitBatchNamespace: batchNamespace,
		Informers:            s.informers,
		Usage:                usage.QueueUsage,
		SchedulerName:        s.cfg.SchedulerName,
		Period:               time.Duration(sc.Period),
		BindWorkers:          sc.BindWorkers,
		Core:                 bridge.Config{UsageFactor: sc.UsageFactor, AgingInterval: time.Duration(sc.AgingInterval)},

		GPUReservationNamespace:      s.cfg.GPUReservationNamespace(),
		GPUReservationImage:          sc.GPUReservationImage,
		GPUReservationServiceAccount: sc.GPUReservationServiceAccount,
		GPUDeviceClasses:             sc.GPUDeviceClasses,
	}, s.restConfig, s.registry, factory)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	lifecycle, err := kube.NewLifecycle(s.restConfig, s.informers)
	if err != nil {
		return fmt.Errorf("slurm job lifecycle: %w", err)
	}
	lifecycle.WithJobIDs(s.jobIDs) // array tasks take their ids as they are split off (addREST ran first)
	// The submit queue makes batched jobs PodGroups; with rest.pendingInBatches it stores
	// only those that must be objects while they wait (a dependency, an array) and removes
	// the batches whose jobs are all stored, the scheduler storing the others when they
	// start. It runs even with the window off, to finish batches written before it was
	// turned off.
	submitQueue, err := kube.NewSubmitQueue(s.restConfig, kube.Options{Namespace: s.cfg.LeaderElection.Namespace})
	if err != nil {
		return fmt.Errorf("submit queue: %w", err)
	}
	if s.cfg.REST.PendingInBatches {
		submitQueue.KeepPending(sched.SubmitBatches, s.informers)
		// The ledger records a waiting job from its batch (sacct lists it PENDING) and
		// reads the batches as the scheduler read them, as the submit queue does: the
		// recorder, like both, runs only on the leader, in this process, so the
		// scheduler's one watch of the batches serves all three, with no second copy.
		s.recorder.ReadSubmitBatches(sched.SubmitBatches)
	}
	s.addComponent(component{name: "submit-queue", leaderOnly: true, run: submitQueue.Run})
	s.addComponent(component{name: "podgrouper", leaderOnly: true, run: grouper.Run})
	s.addComponent(component{name: "scheduler", leaderOnly: true, run: sched.Run})
	s.addComponent(component{name: "slurm-lifecycle", leaderOnly: true, run: lifecycle.Run})
	// Reservations' nodes, windows and state, which the scheduler reads (issue 39).
	scheme, err := kube.Scheme()
	if err != nil {
		return err
	}
	resv, err := resvcontroller.New(resvcontroller.Config{Informers: s.informers, SchedulerNames: s.schedulerNames(), Scheme: scheme}, s.restConfig)
	if err != nil {
		return err
	}
	s.addComponent(component{name: "reservations", leaderOnly: true, run: resv.Run})
	return nil
}

// ledgerDSN is the configured store, or the SQLite file in the state directory.
func (s *Server) ledgerDSN() string {
	if s.cfg.Accounting.DSN != "" {
		return s.cfg.Accounting.DSN
	}
	return filepath.Join(s.cfg.StateDir, "ledger.db")
}

// addAccounting opens the ledger, records every workload into it, and
// serves the dashboard at /ui/ and the ledger's metrics.
func (s *Server) addAccounting(ctx context.Context, auth *slurmapi.AuthConfig) error {
	st, err := store.Open(ctx, s.ledgerDSN())
	if err != nil {
		return fmt.Errorf("accounting ledger: %w", err)
	}
	usage := accounting.UsageConfig{HalfLife: time.Duration(s.cfg.Accounting.HalfLife)}
	rec, err := recorder.New(recorder.Config{Store: st, RESTConfig: s.restConfig, Informers: s.informers, SchedulerName: s.cfg.SchedulerName})
	if err != nil {
		return fmt.Errorf("accounting recorder: %w", err)
	}
	assocs, err := s.shareTree()
	if err != nil {
		return err
	}
	dash, err := dashboard.New(dashboard.Config{Store: st, Usage: usage, Cluster: s.cfg.REST.ClusterName, Assocs: assocs,
		Authenticate: func(r *http.Request) (dashboard.Viewer, error) {
			id, e := auth.Authenticate(r, time.Now())
			if e != nil { // a nil *Error is not a nil error
				return nil, e
			}
			return id, nil
		}})
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	col, err := metrics.New(metrics.Config{Store: st, Usage: usage, Assocs: assocs})
	if err != nil {
		return fmt.Errorf("accounting metrics: %w", err)
	}
	if err := col.Register(s.registry); err != nil {
		return err
	}
	s.ledger, s.recorder = st, rec
	s.router.PathPrefix(dashboard.Prefix).Handler(dash)
	s.router.Handle("/ui", redirectTo(dashboard.Prefix))
	// The leader alone records, whatever the ledger: two recorders would write the same
	// rows twice, and with SQLite race for one file's lock. Followers read what it wrote
	// (a PostgreSQL ledger, or the one SQLite file they share on the leader's node).
	s.addComponent(component{name: "accounting-recorder", leaderOnly: true, run: rec.Run})
	return nil
}

// shareTree reads the fair-share tree (the Queues as accounts under their
// parents, their users) for sshare, sreport's account tree and the fair-share
// metrics. Without it they would build the tree from usage alone: a parent
// account without users of its own (research over nlp and vision) would be
// missing and its children shown under root. It reads the cluster directly,
// as the REST API's associations do, so a Queue just added shows at once.
func (s *Server) shareTree() (func(context.Context) ([]accounting.ShareAssoc, error), error) {
	c, err := kube.NewClient(s.restConfig)
	if err != nil {
		return nil, fmt.Errorf("fair-share tree reader: %w", err)
	}
	return kube.ShareTree(c), nil
}

// RecordValidation records a node's validation run in the ledger's health history.
func (l ledgerDowntime) RecordValidation(ctx context.Context, node, partition string, run health.ValidationRun) error {
	return l.store.RecordValidation(ctx, accounting.NodeValidation{Node: node, Partition: partition, Kind: run.Kind,
		Start: run.StartedAt, End: run.FinishedAt, Result: run.Result, Detail: run.Detail})
}

// ledgerDowntime records the remediation controller's down intervals in the
// ledger, so sreport's DOWN hours come from remediation.
type ledgerDowntime struct{ store accounting.Store }

func (l ledgerDowntime) RecordDown(ctx context.Context, d controller.Downtime) error {
	var tres accounting.TRES // zero: the ledger charges the node's whole capacity
	if len(d.GPUs) > 0 {
		tres.GPUs = float64(len(d.GPUs))
	}
	return l.store.RecordNodeDown(ctx, accounting.NodeDown{Node: d.Node, Start: d.Start, End: d.End, Reason: d.Reason, TRES: tres})
}
