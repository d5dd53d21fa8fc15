package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
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
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Server is the admission webhook: controller-runtime's webhook server on its own
// port, a namespace informer behind it and, with Config.CertSecret, cert-controller's
// rotator keeping its certificate.
type Server struct {
	cfg      Config
	reserved net.Listener // holds Addr's port from New until Run serves on it
	port     int
	synced   []cache.InformerSynced          // the namespace and queue caches
	factory  informers.SharedInformerFactory // nil with Config.Informers
	queues   *queueIndex                     // nil without Config.Queues
	resvs    *reservationIndex               // nil without Config.Queues, as queues
	resvView *reservationView                // nil without Config.Informers or Config.Queues
	qfactory dynamicinformer.DynamicSharedInformerFactory
	adm      *admitter
	// tlsOpts demand, with Config.ClientCAFile, the API server's client certificate.
	tlsOpts []func(*tls.Config)
	ready   chan struct{} // closed once registered, as the webhook server starts
	ca      func() []byte // the CA bundle; set before ready
}

// New prepares the webhook and takes cfg.Addr's port (so a port of 0 is known
// from Addr at once). Run makes or loads the certificate, registers the webhook
// and serves on that port.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ready: make(chan struct{})}
	namespaces, err := s.informers()
	if err != nil {
		return nil, err
	}
	adm := &admitter{
		queues:         s.queues,
		reservations:   s.resvs,
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
	if s.resvView != nil {
		adm.resvWorld = s.resvView.world
	}
	s.adm = adm
	auth, err := clientAuth(cfg)
	if err != nil {
		return nil, err
	}
	s.tlsOpts = []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS12 }, auth}
	if cfg.ClientCAFile == "" {
		cfg.Log.Info("webhook: any client that reaches the webhook's port can call it (no client CA configured: see webhook.clientCAFile in docs/install.md)")
	}
	// controller-runtime's server listens on a port it is given, so a port of 0 is
	// chosen here and held until Run hands it over.
	if s.reserved, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("webhook: listen: %w", err)
	}
	s.port = s.reserved.Addr().(*net.TCPAddr).Port
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
			r, err := shared.GetInformer(context.Background(), &v1alpha1.Reservation{})
			if err != nil {
				return nil, fmt.Errorf("webhook: reservation informer: %w", err)
			}
			if s.resvs, err = reservationIndexOn(r); err != nil {
				return nil, err
			}
			s.synced = append(s.synced, s.queues.synced, s.resvs.synced)
			// Judging a Reservation reads nodes and pods, which only the shared cache holds.
			s.resvView = &reservationView{informers: shared, resvs: s.resvs, now: time.Now}
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
		inf := s.qfactory.ForResource(v1alpha1.GroupVersion.WithResource("reservations")).Informer()
		if s.resvs, err = reservationIndexOn(inf); err != nil {
			return nil, err
		}
		s.synced = append(s.synced, s.queues.synced, s.resvs.synced)
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
func (s *Server) Addr() string { return s.reserved.Addr().String() }

// URL is the address the API server calls for a webhook on this host, such
// as https://localhost:9443/mutate-pods: the first of Config.Hosts, which the
// serving certificate is made for, and the port of Addr.
func (s *Server) URL() string {
	return "https://" + net.JoinHostPort(s.cfg.Hosts[0], strconv.Itoa(s.port)) + MutatePath
}

// CABundle is the PEM of the CA that signed the serving certificate, once Ready.
func (s *Server) CABundle() []byte {
	<-s.ready
	return s.ca()
}

// Ready is closed once the server has its certificate and has registered itself,
// as it starts serving.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// registration describes this server for Register: behind Config.Service, else at
// URL(); self (SelfUser) is never governed.
func (s *Server) registration(ca []byte, self string) Registration {
	reg := Registration{CABundle: ca, Service: s.cfg.Service, SchedulerNames: s.cfg.SchedulerNames,
		GovernGPUs: s.cfg.GovernGPUs, Users: []string{self}, Reservations: s.resvView != nil}
	if reg.Service == nil {
		reg.URL = s.URL()
	}
	return reg
}

// Run syncs the namespace cache, makes or loads the certificate (Config.CertSecret),
// registers the webhook with its CA and serves HTTPS until ctx is done, the rotator
// renewing the certificate as it runs. It returns nil after ctx ends and a clean
// shutdown, or the error that stopped it.
func (s *Server) Run(ctx context.Context) error {
	defer s.reserved.Close()
	if s.factory != nil { // the webhook's own informers; a shared cache runs by its owner
		s.factory.Start(ctx.Done())
		defer s.factory.Shutdown()
	}
	if s.qfactory != nil {
		s.qfactory.Start(ctx.Done())
		defer s.qfactory.Shutdown()
	}
	// stopped is err, or nil once the caller has ended the server.
	parent := ctx
	stopped := func(err error) error {
		if parent.Err() != nil {
			return nil
		}
		return err
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	// Sluice's own identity, so pods the server creates keep what it wrote on them.
	self, err := SelfUser(ctx, s.cfg.Client)
	if err != nil {
		return stopped(err)
	}
	s.adm.self = []string{self}
	var rotated <-chan error // the rotator's manager, until it has ended
	defer func() {
		cancel()
		if rotated != nil {
			<-rotated
		}
	}()
	if s.cfg.CertSecret.Name != "" {
		r, done, err := s.startRotation(ctx)
		if err != nil {
			return stopped(err)
		}
		rotated, s.ca = done, r.copied.caBundle
	} else {
		ca, err := providedCA(s.cfg.CertDir)
		if err != nil {
			return err
		}
		s.ca = func() []byte { return ca }
	}
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return stopped(errors.New("webhook: namespace and queue caches did not sync"))
	}
	if err := Register(ctx, s.cfg.RESTConfig, s.registration(s.ca(), self)); err != nil {
		return stopped(fmt.Errorf("webhook: registering: %w", err))
	}
	host, _, _ := net.SplitHostPort(s.cfg.Addr)
	srv := crwebhook.NewServer(crwebhook.Options{Host: host, Port: s.port, CertDir: s.cfg.CertDir,
		CertName: certFile, KeyName: keyFile, TLSOpts: s.tlsOpts})
	srv.Register(MutatePath, s.adm)
	srv.Register("/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }))
	served := make(chan error, 1)
	s.reserved.Close()
	go func() { served <- srv.Start(ctx) }()
	close(s.ready)
	select {
	case err := <-served:
		if err != nil {
			return stopped(fmt.Errorf("webhook: serve: %w", err))
		}
		return nil
	case err := <-rotated:
		rotated = nil
		cancel()
		<-served
		if err == nil {
			err = errors.New("stopped")
		}
		return stopped(fmt.Errorf("webhook: certificate rotator: %w", err))
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
