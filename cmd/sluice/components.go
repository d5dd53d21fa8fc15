package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/go-logr/logr"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/internal/serverconfig"
	"github.com/sluicehq/sluice/k8sscheduler/gputaint"
	"github.com/sluicehq/sluice/k8sscheduler/webhook"
	"github.com/sluicehq/sluice/remediation/controller"
	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/kube"
)

// addComponents wires every part of Sluice into the server. Each part owns
// its logic; this file only maps configuration onto constructors.
func (s *Server) addComponents() error {
	auth, err := s.authConfig()
	if err != nil {
		return err
	}
	if err := s.addInformers(); err != nil {
		return err
	}
	// The ledger opens first: the REST API's slurmdb views read it.
	if err := s.addAccounting(context.Background(), auth); err != nil {
		return err
	}
	if err := s.addREST(auth); err != nil {
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
	if g := s.cfg.Webhook.GovernGPUs; s.cfg.Webhook.Enabled && g.Enabled && g.TaintNodes {
		s.addComponent(component{name: "gpu-taint", leaderOnly: true, run: func(ctx context.Context) error {
			return gputaint.Run(ctx, s.informers, s.kube)
		}})
	}
	if s.cfg.KAI.Enabled {
		return s.addKAI()
	}
	return nil
}

// schedulerNames are every spec.schedulerName whose pods Sluice takes.
func (s *Server) schedulerNames() []string {
	names := append([]string{s.cfg.SchedulerName}, s.cfg.Webhook.ExtraSchedulerNames...)
	return append(names, s.cfg.KAI.SchedulerNames(names)...)
}

// addWebhook serves the admission webhook on every replica and registers
// it (a Service in-cluster, its loopback URL outside) once its certificate is
// ready: one cert-controller keeps in a Secret of the server's namespace, or one
// provided in webhook.certDir with its ca.crt (the chart's webhook.tls.existingSecret).
func (s *Server) addWebhook() error {
	w := s.cfg.Webhook
	// Reads a pod's owners at admission to name its PodGroup, sparing the pod a patch.
	owners, err := kube.NewClient(s.restConfig)
	if err != nil {
		return fmt.Errorf("webhook owner reader: %w", err)
	}
	// Reads the Queues' namespace selectors: a pod naming a queue its namespace may not use is refused.
	queues, err := dynamic.NewForConfig(s.restConfig)
	if err != nil {
		return fmt.Errorf("webhook queue reader: %w", err)
	}
	certDir := s.cfg.WebhookCertDir()
	var certSecret types.NamespacedName
	if !webhook.CertProvided(certDir) {
		certSecret = types.NamespacedName{Namespace: s.cfg.LeaderElection.Namespace, Name: webhook.DefaultCertSecret}
	}
	var service *admissionregistrationv1.ServiceReference
	if w.ServiceName != "" {
		service = &admissionregistrationv1.ServiceReference{Name: w.ServiceName, Namespace: w.ServiceNamespace}
	}
	hook, err := webhook.New(webhook.Config{
		Informers: s.informers,
		Owners:    owners,
		Queues:    queues,
		// Bare pods are numbered at admission (groups of one): their PodGroup is written
		// only if they have to wait or are evicted (addREST ran first).
		JobIDs:         s.jobIDs.Next,
		Addr:           w.Addr,
		CertDir:        certDir,
		CertSecret:     certSecret,
		Hosts:          w.Hosts,
		Service:        service,
		SchedulerNames: s.schedulerNames(),
		ClientCAFile:   w.ClientCAFile,
		ClientNames:    w.ClientNames,
		GovernGPUs:     s.cfg.GovernGPUs(),
		Client:         s.kube,
		RESTConfig:     s.restConfig,
		Log:            logr.FromSlogHandler(s.log.Handler()).WithValues("component", "webhook"),
	})
	if err != nil {
		return err
	}
	s.addComponent(component{name: "webhook", run: func(ctx context.Context) error {
		// Sluice's labels and annotations stay Sluice's: the admission policy exempts only
		// the identity this server runs as.
		self, err := webhook.SelfUser(ctx, s.kube)
		if err != nil {
			return err
		}
		if err := webhook.RegisterPolicy(ctx, s.kube, webhook.Policy{Users: []string{self}, SchedulerNames: s.schedulerNames()}); err != nil {
			return err
		}
		// Registers the webhook (the pods the server creates itself never governed) and serves it.
		return hook.Run(ctx)
	}})
	return nil
}

// authConfig is the token check and roles the REST API and the dashboard
// share: one key, one idea of who may see what.
func (s *Server) authConfig() (*slurmapi.AuthConfig, error) {
	r := s.cfg.REST
	keyFile := r.JWTKeyFile
	if keyFile == "" {
		keyFile = jwtKeyPath(s.cfg.StateDir)
	}
	key, err := slurmapi.LoadOrCreateKey(keyFile)
	if err != nil {
		return nil, err
	}
	slurmUser := r.SlurmUser
	if slurmUser == "" {
		slurmUser = defaultSlurmUser
	}
	auth := &slurmapi.AuthConfig{Key: key, Operators: r.Operators, Admins: r.Admins, Coordinators: r.Coordinators, SlurmUser: slurmUser}
	r.ApplyPrivateData(auth)
	return auth, nil
}

// defaultSlurmUser is rest.slurmUser's default, the SlurmUser of Debian's packages.
const defaultSlurmUser = "slurm"

// addREST mounts the slurmrestd-compatible API on the server's listener,
// its slurmdb views reading the ledger, and Sluice's job log endpoint.
func (s *Server) addREST(auth *slurmapi.AuthConfig) error {
	r := s.cfg.REST
	// The token key also seals submitted environments, which the pod factory
	// (given the same key as its launch seed) opens when a job starts.
	backend, err := kube.New(s.restConfig, kube.Options{Namespace: s.cfg.LeaderElection.Namespace, SubmitWindow: time.Duration(r.SubmitWindow),
		TokenKey: auth.Key, MaxJobID: r.MaxJobID})
	if err != nil {
		return err
	}
	// srun --pty, salloc's steps and scancel JOB.STEP reach a job's launcher
	// through the server, signed with the key the pod factory derives from
	// the same seed.
	s.launchSeed = auth.Key
	launchers, err := kube.NewLaunchers(s.restConfig, s.launchSeed)
	if err != nil {
		return fmt.Errorf("job launchers: %w", err)
	}
	if s.users, err = s.cfg.Slurm.UserMap(); err != nil {
		return err
	}
	ledger := accounting.Ledger{Store: s.ledger, Usage: accounting.UsageConfig{HalfLife: time.Duration(s.cfg.Accounting.HalfLife)}}
	api, err := slurmapi.NewServer(slurmapi.Config{
		Auth:         *auth,
		ClusterName:  r.ClusterName,
		MaxBodyBytes: r.MaxBodyBytes,
		Submit: slurmapi.SubmitPolicy{ShardsPerGPU: r.ShardsPerGPU, MaxArraySize: r.MaxArraySize,
			CheckUser: s.users.CheckSubmitter},
		SubmitLimits:   r.SubmitLimits(),
		SchedulerStats: schedulerStats(s.registry),
		Steps:          launchers,
		MaxJobID:       backend.JobIDs().MaxSlurm(),
	}, slurmapi.WithLedger(backend, ledger))
	if err != nil {
		return fmt.Errorf("REST API: %w", err)
	}
	logs, err := kube.NewJobLogs(s.restConfig)
	if err != nil {
		return fmt.Errorf("job logs: %w", err)
	}
	s.jobIDs = backend.JobIDs()
	s.jobIDs.StartAbove(s.highestLedgerJobID)
	s.router.Handle(slurmapi.JobLogPath, api.JobLogHandler(logs)).Methods(http.MethodGet)
	s.router.Handle(slurmapi.JobAttachPath, api.JobAttachHandler(launchers)).Methods(http.MethodGet)
	s.router.Handle(slurmapi.JobStepsPath, api.JobStepsHandler()).Methods(http.MethodGet)
	s.router.Handle(slurmapi.ConfigPath, api.ConfigHandler()).Methods(http.MethodGet)
	for _, prefix := range []string{"/slurm/", "/slurmdb/", "/openapi"} {
		s.router.PathPrefix(prefix).Handler(api)
	}
	return nil
}

func (s *Server) addRemediation() {
	r := s.cfg.Remediation
	cfg := controller.Config{
		Informers:          s.informers,
		BreakerShare:       r.BreakerShare,
		BreakerWindow:      time.Duration(r.BreakerWindow),
		DrainTimeout:       time.Duration(r.DrainTimeout),
		TerminatingTimeout: time.Duration(r.TerminatingTimeout),
		Downtime:           ledgerDowntime{store: s.ledger},
		Validation: controller.Validation{
			Image:     r.ValidationImage,
			Namespace: r.ValidationNamespace,
			Timeout:   time.Duration(r.ValidationTimeout),
		},
		IdleValidation: idleValidation(r.IdleValidation),
		History:        ledgerDowntime{store: s.ledger},
		DeferRepairs: controller.DeferRepairs{MaxDelay: time.Duration(r.DeferRepairs.MaxDelay),
			Window: time.Duration(r.DeferRepairs.Window)},
	}
	for _, c := range r.DeferRepairs.Conditions {
		cfg.DeferRepairs.Conditions = append(cfg.DeferRepairs.Conditions, health.ConditionType(c))
	}
	s.addComponent(component{name: "remediation", leaderOnly: true, run: func(ctx context.Context) error {
		return controller.Run(ctx, cfg, s.restConfig)
	}})
}

// highestLedgerJobID is the floor of a job id counter created anew: the
// ledger outlives the cluster objects (a restarted local rig, a
// reinstall), and a repeated id would merge two jobs in sacct.
func (s *Server) highestLedgerJobID(ctx context.Context) (uint32, error) {
	id, err := s.ledger.HighestJobID(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the ledger's highest job id: %w", err)
	}
	return uint32(min(id, 1<<32-1)), nil
}

// idleValidation turns the config's idle validation schedule into the controller's.
func idleValidation(c serverconfig.IdleValidationConfig) controller.IdleValidation {
	if !c.Enabled {
		return controller.IdleValidation{Interval: -1}
	}
	out := controller.IdleValidation{Interval: time.Duration(c.Interval), MaxNodes: c.MaxNodes}
	for name, p := range c.Partitions {
		if out.Partitions == nil {
			out.Partitions = map[string]controller.IdleSchedule{}
		}
		out.Partitions[name] = controller.IdleSchedule{Interval: time.Duration(p.Interval), MaxNodes: p.MaxNodes}
	}
	return out
}

func redirectTo(path string) http.Handler {
	return http.RedirectHandler(path, http.StatusMovedPermanently)
}
