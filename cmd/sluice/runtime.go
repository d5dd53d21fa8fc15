package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/recorder"
	"github.com/sluicehq/sluice/internal/serverconfig"
	"github.com/sluicehq/sluice/internal/servermem"
	"github.com/sluicehq/sluice/slurmapi/kube"
)

// component is one long-running part of the server. Leader-only components
// (the scheduler, the remediation controller, the accounting recorder) run
// only while this replica holds the Lease; the others (the webhook) run on
// every replica, as the REST API, dashboard and metrics on the listener do.
type component struct {
	name       string
	leaderOnly bool
	run        func(ctx context.Context) error
}

// Server is `sluice server`: one process, many components, one HTTP listener
// for the REST API, probes and metrics.
type Server struct {
	cfg        serverconfig.Config
	log        *slog.Logger
	restConfig *rest.Config
	kube       kubernetes.Interface
	registry   *prometheus.Registry
	router     *mux.Router
	identity   string
	ledger     accounting.Store // set by addAccounting
	jobIDs     *kube.JobIDs     // set by addREST; the pod grouper shares it
	launchSeed []byte           // set by addREST (the token key): derives jobs' launch keys
	// users maps Slurm users to identities (set by addREST): the REST API's submit check
	// and the pod factory share it, and so its LDAP cache.
	users kube.UserMap
	// informers is the one informer cache per kind the components share (addInformers).
	informers crcache.Cache
	// podObserver sees each pod whole before the shared cache trims it (the pod grouper).
	podObserver func(*corev1.Pod)
	// recorder writes the ledger (set by addAccounting); addScheduler gives it the
	// submit batches the scheduler reads.
	recorder *recorder.Recorder

	// leader is 1 while this replica runs the leader-only components, so
	// operators (and the hand-over test) see which replica schedules.
	leader prometheus.Gauge

	mu         sync.Mutex
	components []component
	ready      map[string]func() error
	addr       net.Addr // set once listening
	listening  chan struct{}
}

// NewServer connects to the cluster and prepares the HTTP routes; nothing
// runs until Run.
func NewServer(cfg serverconfig.Config, log *slog.Logger) (*Server, error) {
	routeLibraryLogs(log)
	restConfig, err := loadRESTConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	// The scheduler binds many pods at once; client-side throttling must not
	// be the bottleneck (the API server's own flow control still applies).
	restConfig.QPS, restConfig.Burst = 1000, 2000
	if os.Getenv(servermem.ProfileEnv) != "" {
		restConfig.Wrap(servermem.WrapRefusals)
	}
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	host, _ := os.Hostname()
	s := &Server{
		cfg:        cfg,
		log:        log,
		restConfig: restConfig,
		kube:       kube,
		registry:   prometheus.NewRegistry(),
		router:     mux.NewRouter(),
		identity:   fmt.Sprintf("%s_%d", host, os.Getpid()),
		ready:      map[string]func() error{},
		listening:  make(chan struct{}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_server_leader",
			Help: "1 while this replica holds the leader Lease and runs the scheduler and remediation, else 0."}),
	}
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), s.leader)
	s.router.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	s.router.HandleFunc("/readyz", s.serveReadyz)
	s.router.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	s.addReadiness("kube-apiserver", s.apiServerReachable())
	if err := s.addComponents(); err != nil {
		return nil, err
	}
	return s, nil
}

// routeLibraryLogs makes client-go (through klog) and controller-runtime
// write through the server's logger. Left alone, controller-runtime prints a
// "log.SetLogger(...) was never called" stack trace once the process is 30 s
// old, and klog writes its own format on stderr: under `sluice dev`, a
// newcomer's terminal.
func routeLibraryLogs(log *slog.Logger) {
	klog.SetSlogLogger(log)
	ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
}

// loadRESTConfig follows kubectl's rules: an explicit file, else in-cluster,
// else $KUBECONFIG / ~/.kube/config.
func loadRESTConfig(path string) (*rest.Config, error) {
	if path == "" {
		if c, err := rest.InClusterConfig(); err == nil {
			return c, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w (set --kubeconfig or $KUBECONFIG)", err)
	}
	return c, nil
}

func (s *Server) addComponent(c component) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.components = append(s.components, c)
}

// addReadiness registers a check /readyz runs; a failing check makes the
// replica unready with the check's message.
func (s *Server) addReadiness(name string, check func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready[name] = check
}

func (s *Server) serveReadyz(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	names := make([]string, 0, len(s.ready))
	for n := range s.ready {
		names = append(names, n)
	}
	checks := s.ready
	s.mu.Unlock()
	sort.Strings(names)
	var b strings.Builder
	failed := false
	for _, n := range names {
		if err := checks[n](); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-] %s: %v\n", n, err)
		} else {
			fmt.Fprintf(&b, "[+] %s ok\n", n)
		}
	}
	if failed {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, b.String(), "readyz check failed\n")
		return
	}
	fmt.Fprint(w, b.String(), "readyz check passed\n")
}

// apiServerReachable caches the answer for a few seconds so probes do not
// hammer the API server.
func (s *Server) apiServerReachable() func() error {
	var mu sync.Mutex
	var last time.Time
	var lastErr error
	return func() error {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < 5*time.Second {
			return lastErr
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, lastErr = s.kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		last = time.Now()
		return lastErr
	}
}

// Addr is the REST listener's address once Run has started listening.
func (s *Server) Addr() net.Addr {
	<-s.listening
	return s.addr
}

// Run serves until ctx ends, then shuts down within cfg.ShutdownTimeout.
func (s *Server) Run(ctx context.Context) error {
	// The server's namespace holds the leader Lease and the job id counter.
	if err := s.ensureNamespace(ctx, s.cfg.LeaderElection.Namespace); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.Listen, err)
	}
	s.addr = ln.Addr()
	close(s.listening)
	r := s.cfg.REST
	httpSrv := &http.Server{Handler: s.router, ReadHeaderTimeout: time.Duration(r.ReadHeaderTimeout),
		ReadTimeout: time.Duration(r.ReadTimeout), WriteTimeout: time.Duration(r.WriteTimeout), IdleTimeout: time.Duration(r.IdleTimeout)}
	s.log.Info("serving", "addr", ln.Addr().String(), "schedulerName", s.cfg.SchedulerName)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
		cancel()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fail(fmt.Errorf("http: %w", err))
		}
	}()

	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.runComponents(ctx); err != nil {
			fail(err)
		}
	}()

	<-ctx.Done()
	s.log.Info("shutting down")
	sctx, scancel := shutdownContext(s.cfg.ShutdownTimeout)
	defer scancel()
	_ = httpSrv.Shutdown(sctx)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-sctx.Done():
		s.log.Warn("components did not stop within the shutdown timeout", "timeout", s.cfg.ShutdownTimeout.String())
	}
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

func (s *Server) ensureNamespace(ctx context.Context, name string) error {
	_, err := s.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsForbidden(err) {
		return nil
	}
	return fmt.Errorf("namespace %s (leader Lease, job id counter): %w", name, err)
}
