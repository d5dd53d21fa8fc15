package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/sluicehq/sluice/k8sscheduler/webhook"
	"github.com/sluicehq/sluice/remediation/controller"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/kube"
)

// addComponents wires every part of Sluice into the server. Each part owns
// its logic; this file only maps configuration onto constructors.
func (s *Server) addComponents() error {
	if err := s.addREST(); err != nil {
		return err
	}
	if err := s.addAccounting(context.Background()); err != nil {
		return err
	}
	if err := s.addScheduler(); err != nil {
		return err
	}
	if s.cfg.Webhook.Enabled {
		if err := s.addWebhook(); err != nil {
			return err
		}
	}
	if s.cfg.Remediation.Enabled {
		s.addRemediation()
	}
	return nil
}

// schedulerNames are every spec.schedulerName whose pods Sluice takes.
func (s *Server) schedulerNames() []string {
	return append([]string{s.cfg.SchedulerName}, s.cfg.Webhook.ExtraSchedulerNames...)
}

// addWebhook serves the admission webhook on every replica and registers
// it (a Service in-cluster, its loopback URL outside) once it listens.
func (s *Server) addWebhook() error {
	w := s.cfg.Webhook
	hook, err := webhook.New(webhook.Config{
		Addr:           w.Addr,
		StateDir:       filepath.Join(s.cfg.StateDir, "webhook"),
		Hosts:          w.Hosts,
		SchedulerNames: s.schedulerNames(),
		Client:         s.kube,
		Log:            s.log.With("component", "webhook"),
	})
	if err != nil {
		return err
	}
	reg := webhook.Registration{CABundle: hook.CABundle(), SchedulerNames: s.schedulerNames()}
	if w.ServiceName != "" {
		reg.Service = &admissionregistrationv1.ServiceReference{Name: w.ServiceName, Namespace: w.ServiceNamespace}
	} else {
		reg.URL = hook.URL()
	}
	s.addComponent(component{name: "webhook", run: func(ctx context.Context) error {
		if err := webhook.Register(ctx, s.restConfig, reg); err != nil {
			return fmt.Errorf("registering the webhook: %w", err)
		}
		return hook.Run(ctx)
	}})
	return nil
}

// addREST mounts the slurmrestd-compatible API on the server's listener.
func (s *Server) addREST() error {
	r := s.cfg.REST
	keyFile := r.JWTKeyFile
	if keyFile == "" {
		keyFile = jwtKeyPath(s.cfg.StateDir)
	}
	key, err := slurmapi.LoadOrCreateKey(keyFile)
	if err != nil {
		return err
	}
	backend, err := kube.New(s.restConfig, kube.Options{Namespace: s.cfg.LeaderElection.Namespace})
	if err != nil {
		return err
	}
	api, err := slurmapi.NewServer(slurmapi.Config{
		Auth:         slurmapi.AuthConfig{Key: key, Operators: r.Operators, Admins: r.Admins, Coordinators: r.Coordinators},
		ClusterName:  r.ClusterName,
		MaxBodyBytes: r.MaxBodyBytes,
		Submit:       slurmapi.SubmitPolicy{ShardsPerGPU: r.ShardsPerGPU},
	}, backend)
	if err != nil {
		return fmt.Errorf("REST API: %w", err)
	}
	for _, prefix := range []string{"/slurm/", "/slurmdb/", "/openapi"} {
		s.router.PathPrefix(prefix).Handler(api)
	}
	return nil
}

func (s *Server) addRemediation() {
	r := s.cfg.Remediation
	cfg := controller.Config{
		BreakerShare:  r.BreakerShare,
		BreakerWindow: time.Duration(r.BreakerWindow),
		DrainTimeout:  time.Duration(r.DrainTimeout),
		Downtime:      ledgerDowntime{store: s.ledger},
		Validation: controller.Validation{
			Image:     r.ValidationImage,
			Namespace: r.ValidationNamespace,
			Timeout:   time.Duration(r.ValidationTimeout),
		},
	}
	s.addComponent(component{name: "remediation", leaderOnly: true, run: func(ctx context.Context) error {
		return controller.Run(ctx, cfg, s.restConfig)
	}})
}

func redirectTo(path string) http.Handler {
	return http.RedirectHandler(path, http.StatusMovedPermanently)
}
