package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// certCheckEvery is how often a running server checks whether its serving
// certificate is due for renewal.
const certCheckEvery = time.Hour

// Server is the admission webhook: an HTTPS server on its own port with a
// namespace informer behind it.
type Server struct {
	cfg      Config
	listener net.Listener
	certs    *certStore
	synced   []cache.InformerSynced          // the namespace and queue caches
	factory  informers.SharedInformerFactory // nil with Config.Informers
	queues   *queueIndex                     // nil without Config.Queues
	qfactory dynamicinformer.DynamicSharedInformerFactory
	handler  http.Handler
	adm      *admitter
	// tlsConfig serves the certificate and, with Config.ClientCAFile, demands the API
	// server's client certificate.
	tlsConfig *tls.Config
}

// New prepares the webhook: it loads or creates the TLS material in
// cfg.StateDir and takes cfg.Addr's port (so a port of 0 is known from
// Addr at once). Run serves and releases the port when it returns.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	certs, renewed, err := loadOrCreateCerts(cfg.StateDir, cfg.Hosts, time.Now())
	if err != nil {
		return nil, err
	}
	for _, why := range renewed {
		cfg.Log.Info("webhook: "+why, "dir", cfg.StateDir)
	}
	s := &Server{cfg: cfg, certs: certs}
	namespaces, err := s.informers()
	if err != nil {
		return nil, err
	}
	adm := &admitter{
		queues:         s.queues,
		schedulerNames: cfg.SchedulerNames,
		defaultQueue:   cfg.DefaultQueue,
		namespace:      s.namespaceFrom(namespaces),
		priorityClass: func(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
			return cfg.Client.SchedulingV1().PriorityClasses().Get(ctx, name, metav1.GetOptions{})
		},
		gpus:   cfg.GovernGPUs,
		log:    cfg.Log,
		jobIDs: cfg.JobIDs,
	}
	if cfg.Owners != nil {
		adm.owners = newOwnerMemo(cfg.Owners)
	}
	s.adm = adm
	s.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certs.getCertificate}
	if err := clientAuth(cfg, s.tlsConfig); err != nil {
		return nil, err
	}
	if cfg.ClientCAFile == "" {
		cfg.Log.Warn("webhook: any client that reaches the webhook's port can call it (no client CA configured: see webhook.clientCAFile in docs/install.md)")
	}
	mux := http.NewServeMux()
	mux.Handle(MutatePath, adm)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	s.handler = mux
	if s.listener, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("webhook: listen: %w", err)
	}
	return s, nil
}

// informers sets up the namespace and queue caches: the shared cache's informers
// (Config.Informers), else informers of the webhook's own.
func (s *Server) informers() (corelisters.NamespaceLister, error) {
	if shared := s.cfg.Informers; shared != nil {
		// Not yet started, the shared cache returns its informers at once; started, once synced.
		ns, err := shared.GetInformer(context.Background(), &corev1.Namespace{})
		if err != nil {
			return nil, fmt.Errorf("webhook: namespace informer: %w", err)
		}
		store, ok := ns.(cache.SharedIndexInformer)
		if !ok {
			return nil, fmt.Errorf("webhook: the shared namespace informer (%T) has no store to read", ns)
		}
		s.synced = append(s.synced, store.HasSynced)
		if s.cfg.Queues != nil {
			q, err := shared.GetInformer(context.Background(), &v1alpha1.Queue{})
			if err != nil {
				return nil, fmt.Errorf("webhook: queue informer: %w", err)
			}
			if s.queues, err = queueIndexOn(q); err != nil {
				return nil, err
			}
			s.synced = append(s.synced, s.queues.synced)
		}
		return corelisters.NewNamespaceLister(store.GetIndexer()), nil
	}
	s.factory = informers.NewSharedInformerFactory(s.cfg.Client, 0)
	ns := s.factory.Core().V1().Namespaces()
	s.synced = append(s.synced, ns.Informer().HasSynced)
	if s.cfg.Queues != nil {
		var err error
		if s.queues, s.qfactory, err = newQueueIndex(s.cfg.Queues); err != nil {
			return nil, err
		}
		s.synced = append(s.synced, s.queues.synced)
	}
	return ns.Lister(), nil
}

// namespaceFrom reads namespaces from the informer's cache; only one the
// cache has not seen yet (created a moment ago) costs a GET.
func (s *Server) namespaceFrom(lister corelisters.NamespaceLister) namespaceGetter {
	return func(ctx context.Context, name string) (*corev1.Namespace, error) {
		ns, err := lister.Get(name)
		if apierrors.IsNotFound(err) {
			return s.cfg.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		}
		return ns, err
	}
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// URL is the address the API server calls for a webhook on this host, such
// as https://127.0.0.1:9443/mutate-pods (an unspecified listen address is
// reached on 127.0.0.1).
func (s *Server) URL() string {
	tcp := s.listener.Addr().(*net.TCPAddr)
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, fmt.Sprint(tcp.Port)) + MutatePath
}

// CABundle is the PEM of the CA that signed the serving certificate.
func (s *Server) CABundle() []byte { return s.certs.caBundle() }

// Registration describes this server reached at URL(), for Register under
// `sluice dev`. The chart sets Service instead of URL.
func (s *Server) Registration() Registration {
	return Registration{URL: s.URL(), CABundle: s.CABundle(), SchedulerNames: s.cfg.SchedulerNames, GovernGPUs: s.cfg.GovernGPUs}
}

// Run syncs the namespace cache, then serves HTTPS until ctx is done,
// renewing the serving certificate before it expires. It returns nil after
// ctx ends and a clean shutdown, or the error that stopped it.
func (s *Server) Run(ctx context.Context) error {
	defer s.listener.Close()
	if s.factory != nil { // the webhook's own informers; a shared cache runs by its owner
		s.factory.Start(ctx.Done())
		defer s.factory.Shutdown()
	}
	if s.qfactory != nil {
		s.qfactory.Start(ctx.Done())
		defer s.qfactory.Shutdown()
	}
	// Sluice's own identity, so pods the server creates keep what it wrote on them.
	self, err := SelfUser(ctx, s.cfg.Client)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	s.adm.self = []string{self}
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("webhook: namespace and queue caches did not sync")
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         s.tlsConfig,
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(s.listener, "", "") }()
	tick := time.NewTicker(certCheckEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-served:
			return fmt.Errorf("webhook: serve: %w", err)
		case now := <-tick.C:
			if why, err := s.certs.renewServingIfDue(now); err != nil {
				s.cfg.Log.Error("webhook: renewing the serving certificate", "err", err)
			} else if why != "" {
				s.cfg.Log.Info("webhook: new serving certificate: "+why, "dir", s.cfg.StateDir)
			}
		case <-ctx.Done():
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(shutdownCtx); err != nil {
				return fmt.Errorf("webhook: shutdown: %w", err)
			}
			return nil
		}
	}
}

// validSchedulerNames checks names as the API server checks a pod's
// schedulerName (a DNS subdomain), which also keeps them safe to quote in
// the CEL match condition.
func validSchedulerNames(names []string) error {
	for _, n := range names {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return fmt.Errorf("webhook: scheduler name %q: %s", n, strings.Join(errs, "; "))
		}
	}
	return nil
}
