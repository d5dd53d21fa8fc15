// Package serverconfig is the `sluice server` configuration file: its fields and
// their defaults (Default), reading (Load) and checking (Validate) it, and the forms
// the server's components take its settings in.
package serverconfig

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/k8sscheduler/webhook"
	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Config is the `sluice server` configuration file. Every field is
// documented in docs/configuration.md; keep the two in step.
type Config struct {
	// Kubeconfig is the path of a kubeconfig file. Empty means in-cluster
	// configuration, then $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string `yaml:"kubeconfig"`
	// StateDir holds the server's own files (ledger, JWT key, webhook certs).
	StateDir string `yaml:"stateDir"`
	// Listen is the address of the REST API (slurmrestd's port 6820 by
	// default), which also serves /healthz, /readyz and /metrics.
	Listen string `yaml:"listen"`
	// SchedulerName is the pod spec.schedulerName Sluice schedules.
	SchedulerName string `yaml:"schedulerName"`
	// ShutdownTimeout bounds graceful shutdown after SIGTERM.
	ShutdownTimeout Duration `yaml:"shutdownTimeout"`

	Log            LogConfig            `yaml:"log"`
	LeaderElection LeaderElectionConfig `yaml:"leaderElection"`
	Remediation    RemediationConfig    `yaml:"remediation"`
	REST           RESTConfig           `yaml:"rest"`
	Webhook        WebhookConfig        `yaml:"webhook"`
	Scheduler      SchedulerConfig      `yaml:"scheduler"`
	Accounting     AccountingConfig     `yaml:"accounting"`
	Slurm          SlurmConfig          `yaml:"slurm"`
	KAI            KAIConfig            `yaml:"kai"`
}

// SchedulerConfig tunes the cycle loop; zero values take its defaults.
type SchedulerConfig struct {
	// Period is the longest time between two cycles (default 1s); a cycle
	// also runs shortly after any relevant change.
	Period Duration `yaml:"period"`
	// BindWorkers is how many binds, evictions and Slurm pod creates are in
	// flight at once (default 32).
	BindWorkers int `yaml:"bindWorkers"`
	// UsageFactor is how strongly recent usage corrects over-quota shares
	// (KAI's k); 0 ignores history.
	UsageFactor float64 `yaml:"usageFactor"`
	// AgingInterval adds one priority point per interval a job waits.
	AgingInterval Duration `yaml:"agingInterval"`
	// GPUReservationNamespace, GPUReservationImage and GPUReservationServiceAccount
	// are where and as what the reservation pods of shared GPUs run (docs/architecture.md);
	// the namespace defaults to the leader election namespace. The chart sets all three.
	GPUReservationNamespace      string `yaml:"gpuReservationNamespace"`
	GPUReservationImage          string `yaml:"gpuReservationImage"`
	GPUReservationServiceAccount string `yaml:"gpuReservationServiceAccount"`
	// GPUDeviceClasses are the DRA DeviceClasses whose devices are whole GPUs, counted
	// as nvidia.com/gpu is in quota, fair share and the ledger (default
	// ["gpu.nvidia.com"], NVIDIA's DRA driver's).
	GPUDeviceClasses []string `yaml:"gpuDeviceClasses"`
}

// GPUReservationNamespace is where reservation pods run: the one configured, else the
// leader election namespace.
func (c Config) GPUReservationNamespace() string {
	return cmp.Or(c.Scheduler.GPUReservationNamespace, c.LeaderElection.Namespace)
}

// AccountingConfig is the ledger.
type AccountingConfig struct {
	// DSN selects the store: a file path or sqlite:///path (SQLite, the
	// default stateDir/ledger.db) or postgres://... (PostgreSQL).
	DSN string `yaml:"dsn"`
	// DSNFile is a file whose content is the DSN (a mounted Secret), so a
	// database password need not be in the config file. Load reads
	// it into DSN; setting both is an error.
	DSNFile string `yaml:"dsnFile"`
	// HalfLife is Slurm's PriorityDecayHalfLife for fair-share usage (default 7 days).
	HalfLife Duration `yaml:"halfLife"`
}

// SlurmConfig is how Slurm jobs become pods.
type SlurmConfig struct {
	// DefaultImage runs jobs that name no --container-image in a partition
	// without a default image; empty refuses such jobs.
	DefaultImage string `yaml:"defaultImage"`
	// LauncherImage is the sluice image every job pod's init container
	// copies the launcher and srun from (default: this release's image).
	LauncherImage string `yaml:"launcherImage"`
	// ClusterDomain is the cluster's DNS domain (the kubelets' clusterDomain):
	// a multi-node job's pods resolve each other's node names under it.
	ClusterDomain string `yaml:"clusterDomain"`
	// InactiveLimit is how long an allocation (salloc's) stays once no salloc
	// holds it (killed, cut off), as slurm.conf's InactiveLimit; 0: 60 s.
	InactiveLimit Duration `yaml:"inactiveLimit"`
	// Users maps Slurm users to the identity their pods run as; it comes
	// before Identity's sources. Only a user mapped to uid 0 runs as root.
	Users map[string]SlurmUser `yaml:"users"`
	// Identity is where the site's other users' identities are: passwd and
	// group files, then an LDAP directory (identity.go).
	Identity IdentityConfig `yaml:"identity"`
	// UnmappedUsers is what becomes of users no one maps: "refuse" (their
	// submissions are refused; the default) or "run" (as DefaultUser).
	UnmappedUsers string `yaml:"unmappedUsers"`
	// DefaultUser is the identity unmapped users' jobs run as; never root.
	DefaultUser SlurmUser `yaml:"defaultUser"`
	// Filesystems are the site's shared filesystems every Slurm job pod mounts
	// (kube.Filesystem: name, mountPath, readOnly, partitions and one volume
	// source, in the Kubernetes API's field names).
	Filesystems []map[string]any `yaml:"filesystems"`
}

// PodFilesystems reads the site's filesystems as the pod factory takes them: in the
// Kubernetes API's own field names, none unknown, each valid.
func (s SlurmConfig) PodFilesystems() (kube.Filesystems, error) {
	out := make(kube.Filesystems, len(s.Filesystems))
	for i, raw := range s.Filesystems {
		data, err := json.Marshal(raw)
		if err != nil {
			return nil, fmt.Errorf("slurm.filesystems[%d]: %w", i, err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			return nil, fmt.Errorf("slurm.filesystems[%d]: %w", i, err)
		}
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("slurm.filesystems: %w", err)
	}
	return out, nil
}

// SlurmUser is one user's identity: uid, primary gid, supplementary
// groups (the primary is always among them) and home directory (the jobs'
// HOME; without one, "/").
type SlurmUser struct {
	UID    int64   `yaml:"uid"`
	GID    int64   `yaml:"gid"`
	Groups []int64 `yaml:"groups,omitempty"`
	Home   string  `yaml:"home,omitempty"`
}

// WebhookConfig is the mutating admission webhook for Sluice's pods (queue
// defaulting, GPU-sharing validation, GPU environment wiring).
type WebhookConfig struct {
	Enabled bool `yaml:"enabled"`
	// CertDir is where the webhook server reads its serving certificate and key
	// (tls.crt, tls.key), copied there from the Secret cert-controller's rotator
	// keeps; a ca.crt already in it is a certificate the site provides, served as
	// it is. Empty means stateDir/webhook.
	CertDir string `yaml:"certDir"`
	// Addr is where the webhook serves HTTPS; port 0 picks a free port.
	Addr string `yaml:"addr"`
	// Hosts are the DNS names its certificate is valid for (default localhost;
	// the Service's DNS names in a cluster, NAME.NAMESPACE.svc first); IP
	// addresses are ignored with a warning, as cert-controller writes DNS names only.
	Hosts []string `yaml:"hosts"`
	// ServiceName and ServiceNamespace register the webhook behind a
	// Service (in-cluster); empty registers its URL (outside the cluster).
	ServiceName      string `yaml:"serviceName"`
	ServiceNamespace string `yaml:"serviceNamespace"`
	// ExtraSchedulerNames are other schedulerNames whose pods Sluice takes,
	// such as kai-scheduler for KAI manifests as they are.
	ExtraSchedulerNames []string `yaml:"extraSchedulerNames"`
	// ClientCAFile is the CA of the client certificate the API server presents to
	// webhooks (its admission configuration); with it, only the API server can call
	// the webhook. ClientNames limits the accepted CommonNames.
	ClientCAFile string   `yaml:"clientCAFile"`
	ClientNames  []string `yaml:"clientNames"`
	// GovernGPUs makes every GPU pod Sluice's (webhook.GovernGPUs); off by default here,
	// on in the chart.
	GovernGPUs GovernGPUsConfig `yaml:"governGPUs"`
}

// GovernGPUsConfig is webhook.governGPUs: GPU pods of other schedulers are adopted or
// refused, and GPU nodes carry a taint only Sluice's pods tolerate.
type GovernGPUsConfig struct {
	Enabled bool `yaml:"enabled"`
	// Action for a pod of another scheduler that requests GPUs: adopt (the default: it
	// gets Sluice's schedulerName and its namespace's queue) or refuse.
	Action string `yaml:"action"`
	// ExemptNamespaces are left alone (default kube-system, kube-public,
	// kube-node-lease); the server's own namespace always is.
	ExemptNamespaces []string `yaml:"exemptNamespaces"`
	// TaintNodes has the server put sluice.dev/gpu:NoSchedule on every node that offers
	// GPUs (it never removes it).
	TaintNodes bool `yaml:"taintNodes"`
}

// GovernGPUs is the webhook's setting: the configured one, with the server's own
// namespaces (GPU reservations, remediation's validations) exempt.
func (c Config) GovernGPUs() webhook.GovernGPUs {
	g := c.Webhook.GovernGPUs
	if !g.Enabled {
		return webhook.GovernGPUs{}
	}
	exempt := g.ExemptNamespaces
	if exempt == nil {
		exempt = webhook.DefaultExemptNamespaces
	}
	exempt = slices.Clone(exempt)
	for _, own := range []string{c.LeaderElection.Namespace, c.GPUReservationNamespace(), c.Remediation.ValidationNamespace} {
		if own != "" && !slices.Contains(exempt, own) {
			exempt = append(exempt, own)
		}
	}
	return webhook.GovernGPUs{Enabled: true, Action: g.Action, ExemptNamespaces: exempt}
}

// RESTConfig is the slurmrestd-compatible API: its auth/jwt key and who may
// see and change what.
type RESTConfig struct {
	// JWTKeyFile is the HS256 key; empty means stateDir/jwt.key, created
	// with 32 random bytes on first start.
	JWTKeyFile string `yaml:"jwtKeyFile"`
	// Operators see and change every job; Admins also change accounts and QOS.
	Operators []string `yaml:"operators"`
	Admins    []string `yaml:"admins"`
	// SlurmUser is an administrator besides root, as Slurm's SlurmUser is;
	// default "slurm".
	SlurmUser string `yaml:"slurmUser"`
	// PrivateData is Slurm's PrivateData: "jobs", "accounts", "usage" and
	// "users" show users only their own (coordinators also their accounts').
	// Empty, Slurm's default: every user sees everything, and changes only
	// their own jobs.
	PrivateData []string `yaml:"privateData"`
	// Coordinators maps a user to the accounts whose jobs they may manage.
	Coordinators map[string][]string `yaml:"coordinators"`
	ClusterName  string              `yaml:"clusterName"`
	// MaxBodyBytes bounds request bodies, scripts included (default 1 MiB).
	MaxBodyBytes int64 `yaml:"maxBodyBytes"`
	// ShardsPerGPU is how many gres/shard make one GPU.
	ShardsPerGPU int `yaml:"shardsPerGPU"`
	// MaxArraySize is Slurm's MaxArraySize: array task indices must be
	// below it (0: Slurm's default, 1001).
	MaxArraySize int `yaml:"maxArraySize"`
	// MaxJobID is Slurm's MaxJobId: the highest id a Slurm job (a
	// submission, an array task) takes. The ids above it, to 2147483647
	// (job_id is an int32 in Slurm's OpenAPI), are kept for Kubernetes
	// workloads, so Slurm users who use up theirs (ids are never reused) do
	// not stop manifest jobs being numbered. 0: 2130706431 (2^31 - 1 - 2^24).
	MaxJobID uint32 `yaml:"maxJobId"`
	// SubmitWindow commits submissions in groups: those validated within the
	// window share one API write and are answered together (0 creates each
	// job's PodGroup at once). See docs/rest-compatibility.md.
	SubmitWindow Duration `yaml:"submitWindow"`
	// PendingInBatches keeps a pending Slurm job in its submit batch until it starts
	// (the scheduler reads the batches; docs/architecture.md). On by default: a
	// submission then costs the API server its share of one write, not a PodGroup.
	PendingInBatches bool `yaml:"pendingInBatches"`
	// SubmitRateLimit bounds each user's submissions (429 past it).
	SubmitRateLimit SubmitRateLimit `yaml:"submitRateLimit"`
	// The HTTP server's timeouts (REST API, dashboard, probes, metrics):
	// for a request's headers, its whole body, writing the answer (a
	// followed job log is exempt), and an idle keep-alive connection.
	ReadHeaderTimeout Duration `yaml:"readHeaderTimeout"`
	ReadTimeout       Duration `yaml:"readTimeout"`
	WriteTimeout      Duration `yaml:"writeTimeout"`
	IdleTimeout       Duration `yaml:"idleTimeout"`
}

// SubmitRateLimit is a token bucket per user: Burst submissions at once,
// refilled at PerSecond; 0 turns the limit off. Users overrides it for
// named users.
type SubmitRateLimit struct {
	PerSecond float64              `yaml:"perSecond"`
	Burst     int                  `yaml:"burst"`
	Users     map[string]RateLimit `yaml:"users"`
}

// RateLimit is one user's submission limit.
type RateLimit struct {
	PerSecond float64 `yaml:"perSecond"`
	Burst     int     `yaml:"burst"`
}

// RemediationConfig tunes the remediation controller (quarantine, drain,
// repair request, revalidation, circuit breaker). Zero values take the
// controller's defaults.
type RemediationConfig struct {
	Enabled             bool     `yaml:"enabled"`
	BreakerShare        float64  `yaml:"breakerShare"`
	BreakerWindow       Duration `yaml:"breakerWindow"`
	DrainTimeout        Duration `yaml:"drainTimeout"`
	TerminatingTimeout  Duration `yaml:"terminatingTimeout"`
	ValidationImage     string   `yaml:"validationImage"`
	ValidationNamespace string   `yaml:"validationNamespace"`
	ValidationTimeout   Duration `yaml:"validationTimeout"`
	// IdleValidation validates idle nodes on a schedule (see docs/operations.md).
	IdleValidation IdleValidationConfig `yaml:"idleValidation"`
	// DeferRepairs repairs faults that can wait in a maintenance reservation.
	DeferRepairs DeferRepairsConfig `yaml:"deferRepairs"`
}

// DeferRepairsConfig lists the fault conditions whose repair may wait for a maintenance
// window, and bounds the wait.
type DeferRepairsConfig struct {
	Conditions []string `yaml:"conditions"`
	MaxDelay   Duration `yaml:"maxDelay"`
	Window     Duration `yaml:"window"`
}

// IdleValidationConfig schedules validations of idle nodes, per partition.
type IdleValidationConfig struct {
	Enabled bool `yaml:"enabled"`
	// Interval: a node is validated again this long after its last validation ended.
	Interval Duration `yaml:"interval"`
	// MaxNodes: the most nodes of one partition validated at once.
	MaxNodes int `yaml:"maxNodes"`
	// Partitions overrides Interval and MaxNodes by partition name.
	Partitions map[string]IdleScheduleConfig `yaml:"partitions"`
}

// IdleScheduleConfig is one partition's idle validation schedule.
type IdleScheduleConfig struct {
	Interval Duration `yaml:"interval"`
	MaxNodes int      `yaml:"maxNodes"`
}

// LogConfig selects the structured log output.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug | info | warn | error
	Format string `yaml:"format"` // text | json
}

// LeaderElectionConfig makes two or more replicas safe: only the holder of
// the Lease schedules.
type LeaderElectionConfig struct {
	Enabled       bool     `yaml:"enabled"`
	Namespace     string   `yaml:"namespace"`
	LeaseName     string   `yaml:"leaseName"`
	LeaseDuration Duration `yaml:"leaseDuration"`
	RenewDeadline Duration `yaml:"renewDeadline"`
	RetryPeriod   Duration `yaml:"retryPeriod"`
}

// Default is what the server runs with when no file is given.
func Default() Config {
	return Config{
		StateDir:        ".sluice/state",
		Listen:          ":6820",
		SchedulerName:   "sluice",
		ShutdownTimeout: Duration(20 * time.Second),
		Log:             LogConfig{Level: "info", Format: "text"},
		LeaderElection: LeaderElectionConfig{
			Enabled:       true,
			Namespace:     "sluice-system",
			LeaseName:     "sluice-server",
			LeaseDuration: Duration(10 * time.Second),
			RenewDeadline: Duration(7 * time.Second),
			RetryPeriod:   Duration(time.Second),
		},
		REST: RESTConfig{
			SubmitWindow:     Duration(2 * time.Millisecond),
			PendingInBatches: true,
			// Far below what the server sustains (measured: docs/benchmarks.md,
			// Submissions as installed, against real slurmrestd), far above
			// what a person or a sane script submits: one user cannot
			// crowd out the rest. Job arrays submit many tasks at once.
			SubmitRateLimit:   SubmitRateLimit{PerSecond: 100, Burst: 500},
			ReadHeaderTimeout: Duration(10 * time.Second),
			ReadTimeout:       Duration(time.Minute),
			WriteTimeout:      Duration(2 * time.Minute),
			IdleTimeout:       Duration(2 * time.Minute),
		},
		// A fresh install runs no one as anyone until the site says who is who.
		Slurm: SlurmConfig{UnmappedUsers: string(kube.UnmappedRefuse),
			DefaultUser: SlurmUser{UID: kube.NobodyIDs.UID, GID: kube.NobodyIDs.GID}},
		Remediation: RemediationConfig{Enabled: true, IdleValidation: IdleValidationConfig{Enabled: true}},
		Webhook:     WebhookConfig{Enabled: true, Addr: "127.0.0.1:9443"},
	}
}

// Load reads a YAML file over the defaults. Unknown fields are
// rejected with their line number, so a typo never silently falls back to a
// default.
func Load(path string) (Config, error) {
	cfg := Default()
	if path == "" {
		return cfg, cfg.Validate()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("reading config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	// io.EOF: an empty file means "all defaults".
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	if err := cfg.Accounting.readDSNFile(); err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// readDSNFile sets DSN from DSNFile's content, without the trailing
// newline that `kubectl create secret --from-file` and editors leave. It runs
// once, on the file as written, so DSN set afterwards is not a conflict.
func (a *AccountingConfig) readDSNFile() error {
	if a.DSNFile == "" {
		return nil
	}
	if a.DSN != "" {
		return errors.New("accounting: set dsn or dsnFile, not both")
	}
	data, err := os.ReadFile(a.DSNFile)
	if err != nil {
		return fmt.Errorf("accounting.dsnFile: %w", err)
	}
	a.DSN = strings.TrimSpace(string(data))
	if a.DSN == "" {
		return fmt.Errorf("accounting.dsnFile %s is empty: it must hold the ledger's DSN", a.DSNFile)
	}
	return nil
}

// WebhookCertDir is where the webhook's certificates are: webhook.certDir,
// else stateDir/webhook.
func (c Config) WebhookCertDir() string {
	if c.Webhook.CertDir != "" {
		return c.Webhook.CertDir
	}
	return filepath.Join(c.StateDir, "webhook")
}

// Validate reports the first value that cannot work.
func (c Config) Validate() error {
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log.level %q: want debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		return fmt.Errorf("log.format %q: want text or json", c.Log.Format)
	}
	if c.Listen == "" {
		return errors.New("listen: must not be empty (e.g. \":6820\")")
	}
	if c.SchedulerName == "" {
		return errors.New("schedulerName: must not be empty")
	}
	if c.StateDir == "" {
		return errors.New("stateDir: must not be empty")
	}
	if err := c.REST.validate(); err != nil {
		return err
	}
	if v := c.Remediation.IdleValidation; v.MaxNodes < 0 || v.Interval < 0 {
		return fmt.Errorf("remediation.idleValidation: interval and maxNodes must not be negative")
	}
	for name, p := range c.Remediation.IdleValidation.Partitions {
		if p.MaxNodes < 0 || p.Interval < 0 {
			return fmt.Errorf("remediation.idleValidation.partitions.%s: interval and maxNodes must not be negative", name)
		}
	}
	for _, cond := range c.Remediation.DeferRepairs.Conditions {
		if !health.IsFaultCondition(cond) {
			return fmt.Errorf("remediation.deferRepairs.conditions: %q is not a fault condition (%v)", cond, health.FaultConditions)
		}
	}
	if d := c.Remediation.DeferRepairs; d.MaxDelay < 0 || d.Window < 0 {
		return fmt.Errorf("remediation.deferRepairs: maxDelay and window must not be negative")
	}
	if r := c.Remediation; r.BreakerShare < 0 || r.BreakerShare > 1 {
		return fmt.Errorf("remediation.breakerShare %v: want a share between 0 and 1", r.BreakerShare)
	}
	if n := c.REST.MaxArraySize; n < 0 || n > sbatch.MaxArraySizeLimit {
		return fmt.Errorf("rest.maxArraySize %d: want 0 (Slurm's default, %d) to %d", n, sbatch.DefaultMaxArraySize, sbatch.MaxArraySizeLimit)
	}
	if err := validPrivateData(c.REST.PrivateData); err != nil {
		return err
	}
	if n := c.REST.MaxJobID; n > kube.LastJobID {
		return fmt.Errorf("rest.maxJobId %d: want 0 (%d) to %d", n, kube.DefaultMaxSlurmJobID, kube.LastJobID)
	}
	if g := c.Webhook.GovernGPUs; g.Enabled {
		if !c.Webhook.Enabled {
			return errors.New("webhook.governGPUs.enabled needs webhook.enabled: the webhook adopts or refuses the GPU pods of other schedulers")
		}
		switch g.Action {
		case "", webhook.ActionAdopt, webhook.ActionRefuse:
		default:
			return fmt.Errorf("webhook.governGPUs.action %q: want %s or %s", g.Action, webhook.ActionAdopt, webhook.ActionRefuse)
		}
	}
	if c.KAI.Enabled && !c.Webhook.Enabled {
		return errors.New("kai.enabled needs webhook.enabled: the webhook gives kai-scheduler pods Sluice's schedulerName")
	}
	if _, err := c.Slurm.PodFilesystems(); err != nil {
		return err
	}
	if err := c.Slurm.validateIdentity(); err != nil {
		return fmt.Errorf("slurm: %w", err)
	}
	le := c.LeaderElection
	if le.Enabled {
		if le.Namespace == "" || le.LeaseName == "" {
			return errors.New("leaderElection: namespace and leaseName are required when enabled")
		}
		if !(le.LeaseDuration > le.RenewDeadline && le.RenewDeadline > le.RetryPeriod && le.RetryPeriod > 0) {
			return fmt.Errorf("leaderElection: want leaseDuration (%s) > renewDeadline (%s) > retryPeriod (%s) > 0",
				le.LeaseDuration, le.RenewDeadline, le.RetryPeriod)
		}
	}
	return nil
}

// Duration is a time.Duration written as "15s", "2m" in YAML.
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML parses Go duration syntax and names the line of a bad value.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 15s, 2m)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration back in the same syntax.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// validate reports the first REST setting that cannot work.
func (r RESTConfig) validate() error {
	limits := map[string]RateLimit{"": {r.SubmitRateLimit.PerSecond, r.SubmitRateLimit.Burst}}
	for u, l := range r.SubmitRateLimit.Users {
		limits[u] = l
	}
	for u, l := range limits {
		if l.PerSecond < 0 || l.Burst < 0 {
			where := "rest.submitRateLimit"
			if u != "" {
				where += ".users." + u
			}
			return fmt.Errorf("%s: perSecond (%g) and burst (%d) must not be negative (perSecond 0 turns the limit off)", where, l.PerSecond, l.Burst)
		}
	}
	for name, d := range map[string]Duration{"readHeaderTimeout": r.ReadHeaderTimeout, "readTimeout": r.ReadTimeout, "writeTimeout": r.WriteTimeout, "idleTimeout": r.IdleTimeout} {
		if d < 0 {
			return fmt.Errorf("rest.%s %s: must not be negative (0: no timeout)", name, d)
		}
	}
	return nil
}

// SubmitLimits is the REST server's form of the rate limit.
func (r RESTConfig) SubmitLimits() slurmapi.SubmitLimits {
	out := slurmapi.SubmitLimits{Default: slurmapi.RateLimit{PerSecond: r.SubmitRateLimit.PerSecond, Burst: r.SubmitRateLimit.Burst}}
	if len(r.SubmitRateLimit.Users) > 0 {
		out.Users = map[string]slurmapi.RateLimit{}
		for u, l := range r.SubmitRateLimit.Users {
			out.Users[u] = slurmapi.RateLimit{PerSecond: l.PerSecond, Burst: l.Burst}
		}
	}
	return out
}

// LauncherImageFor is the configured launcher image, else the sluice image of
// release version (a development build names :latest).
func (s SlurmConfig) LauncherImageFor(version string) string {
	if s.LauncherImage != "" {
		return s.LauncherImage
	}
	if version == "dev" || version == "" {
		return kube.DefaultLauncherImage
	}
	return "ghcr.io/sluicehq/sluice:" + version
}
