package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sluicehq/sluice/slurmapi/kube"
)

// runComponents runs the components on controller-runtime's manager until ctx ends or
// one of them fails: the leader-only ones while this replica holds the Lease (the manager's
// leader election, released on a clean stop so a standby takes over at once; losing it
// ends the process, as a replica that might still be binding must not run beside the new
// leader), the others at once, and on the way out each gets the shutdown timeout to stop.
// The manager's own metrics and probe servers stay off: the server's one listener serves
// /metrics, /healthz and /readyz beside the REST API, as the chart's one port expects.
func (s *Server) runComponents(ctx context.Context) error {
	le := s.cfg.LeaderElection
	scheme, err := kube.Scheme()
	if err != nil {
		return err
	}
	shutdown := time.Duration(s.cfg.ShutdownTimeout)
	lease, renew, retry := time.Duration(le.LeaseDuration), time.Duration(le.RenewDeadline), time.Duration(le.RetryPeriod)
	opts := manager.Options{
		Scheme:                        scheme,
		Logger:                        logr.FromSlogHandler(s.log.Handler()),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		GracefulShutdownTimeout:       &shutdown,
		LeaderElection:                le.Enabled,
		LeaderElectionID:              le.LeaseName,
		LeaderElectionNamespace:       le.Namespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
	}
	if le.Enabled {
		// The Lease names this replica as host_pid (operators and the hand-over tests read
		// it), where the manager's own lock would name it by a random UUID.
		opts.LeaderElectionResourceLockInterface = &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.LeaseName},
			Client:     s.kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: s.identity},
		}
	}
	mgr, err := manager.New(s.restConfig, opts)
	if err != nil {
		return fmt.Errorf("controller manager: %w", err)
	}
	for _, c := range s.components {
		if err := mgr.Add(componentRunnable{c: c, s: s}); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	if err := mgr.Add(leaderGauge{s}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// componentRunnable runs one component on the manager; a leader-only one waits for the
// Lease.
type componentRunnable struct {
	c component
	s *Server
}

func (r componentRunnable) NeedLeaderElection() bool { return r.c.leaderOnly }

// Start runs the component; an error once the server is stopping is the stop's, not the
// component's failure.
func (r componentRunnable) Start(ctx context.Context) error {
	r.s.log.Info("component starting", "component", r.c.name)
	// Components log through the logr.Logger their context carries (klog.FromContext),
	// named after them; the server's slog handler is its sink.
	ctx = logr.NewContext(ctx, logr.FromSlogHandler(r.s.log.Handler()).WithValues("component", r.c.name))
	if err := r.c.run(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("%s: %w", r.c.name, err)
	}
	return nil
}

// leaderGauge sets sluice_server_leader while this replica runs the leader-only
// components, so operators (and the hand-over test) see which replica schedules.
type leaderGauge struct{ s *Server }

func (leaderGauge) NeedLeaderElection() bool { return true }

func (g leaderGauge) Start(ctx context.Context) error {
	if le := g.s.cfg.LeaderElection; le.Enabled {
		g.s.log.Info("became leader", "lease", le.Namespace+"/"+le.LeaseName, "identity", g.s.identity)
	}
	g.s.leader.Set(1)
	<-ctx.Done()
	g.s.leader.Set(0)
	return nil
}
