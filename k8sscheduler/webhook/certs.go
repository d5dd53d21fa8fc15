package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// DefaultCertSecret is the Secret `sluice server` keeps the webhook's CA and serving
// certificate in (Config.CertSecret), in its own namespace.
const DefaultCertSecret = "sluice-webhook-certs"

// The files in Config.CertDir and the keys of Config.CertSecret (cert-controller's names).
const (
	caFile   = "ca.crt"
	certFile = "tls.crt"
	keyFile  = "tls.key"
)

// rotators numbers the rotators of this process: controller-runtime refuses a second
// controller of the same name, and a test runs several servers one after the other.
var rotators atomic.Int32

// CertProvided says whether dir holds a certificate someone else manages, with the CA
// that signed it (ca.crt, as a mounted Secret of cert-manager's has): the server
// then serves it as it is (Config.CertSecret empty). The server writes no ca.crt there.
func CertProvided(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, caFile))
	return err == nil
}

// providedCA reads the CA of a certificate provided in dir (Config.CertSecret empty),
// checking that the serving pair is there for the webhook server to load.
func providedCA(dir string) ([]byte, error) {
	ca, err := os.ReadFile(filepath.Join(dir, caFile))
	if err != nil {
		return nil, fmt.Errorf("webhook: provided certificate: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("webhook: provided certificate: %s holds no PEM certificate", filepath.Join(dir, caFile))
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, certFile), filepath.Join(dir, keyFile)); err != nil {
		return nil, fmt.Errorf("webhook: provided certificate: %w", err)
	}
	return ca, nil
}

// rotation is cert-controller's rotator over Config.CertSecret, run by a controller-runtime
// manager of its own, and the copy of the Secret's serving pair in Config.CertDir.
type rotation struct {
	ready  chan struct{} // closed by the rotator: certificate valid, files present, CA injected
	copied *certCopy
}

// startRotation creates the Secret when missing, then runs the rotator until ctx ends.
// It returns once the rotator is ready and the Secret's serving pair is in the
// directory, or with the error that stopped it; done then yields the manager's end.
func (s *Server) startRotation(ctx context.Context) (r *rotation, done <-chan error, err error) {
	key := s.cfg.CertSecret
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "sluice"}},
		Type: corev1.SecretTypeOpaque,
	}
	// The rotator only reads and updates it: it must exist.
	if _, err := s.cfg.Client.CoreV1().Secrets(key.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, nil, fmt.Errorf("webhook: certificate Secret %s: %w", key, err)
	}
	// A pair left by an earlier run would tell the rotator the certificate is in place.
	if err := os.MkdirAll(s.cfg.CertDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("webhook: certificate directory: %w", err)
	}
	for _, f := range []string{certFile, keyFile} {
		if err := os.Remove(filepath.Join(s.cfg.CertDir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("webhook: certificate directory: %w", err)
		}
	}
	mgr, err := manager.New(s.cfg.RESTConfig, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The manager's own cache holds the one Secret, for the copy below.
		Cache: crcache.Options{ByObject: map[client.Object]crcache.ByObject{&corev1.Secret{}: {
			Namespaces: map[string]crcache.Config{key.Namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", key.Name),
		}}},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("webhook: certificate rotator: %w", err)
	}
	r = &rotation{ready: make(chan struct{}), copied: newCertCopy(s.cfg.CertDir, s.cfg.Log)}
	name := "sluice-webhook-certs"
	if n := rotators.Add(1); n > 1 {
		name = fmt.Sprintf("%s-%d", name, n)
	}
	err = rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      key,
		CertDir:        s.cfg.CertDir,
		CAName:         "sluice-webhook-ca",
		CAOrganization: "sluice",
		DNSName:        s.cfg.Hosts[0],
		ExtraDNSNames:  s.cfg.Hosts[1:],
		IsReady:        r.ready,
		Webhooks:       []rotator.WebhookInfo{{Name: DefaultConfigurationName, Type: rotator.Mutating}},
		// Every replica serves the webhook, so every replica needs the files.
		RequireLeaderElection: false,
		ControllerName:        name,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("webhook: certificate rotator: %w", err)
	}
	informer, err := mgr.GetCache().GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return nil, nil, fmt.Errorf("webhook: certificate Secret informer: %w", err)
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    r.copied.from,
		UpdateFunc: func(_, obj any) { r.copied.from(obj) },
	}); err != nil {
		return nil, nil, fmt.Errorf("webhook: certificate Secret informer: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- mgr.Start(ctx) }()
	for _, wait := range []<-chan struct{}{r.ready, r.copied.first} {
		select {
		case <-wait:
		case err := <-ended:
			if err == nil {
				err = ctx.Err()
			}
			return nil, nil, fmt.Errorf("webhook: certificate rotator: %w", err)
		}
	}
	return r, ended, nil
}

// certCopy writes the Secret's serving pair into the directory the webhook server
// reads, as the kubelet writes a mounted Secret: cert-controller only waits for the
// files. Outside the cluster (`sluice dev`) there is no kubelet; inside, this is
// sooner than the kubelet's sync (up to a minute), so a new CA and the certificate
// it signed reach the API server and the webhook server together.
type certCopy struct {
	dir   string
	log   logr.Logger
	mu    sync.Mutex
	cert  []byte                 // the pair last written
	ca    atomic.Pointer[[]byte] // the Secret's CA, as last seen with a good pair
	first chan struct{}          // closed on the first write
}

func newCertCopy(dir string, log logr.Logger) *certCopy {
	return &certCopy{dir: dir, log: log, first: make(chan struct{})}
}

// from copies the pair of a Secret the informer delivers, when it is a good pair
// and not the one written last.
func (c *certCopy) from(obj any) {
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	if err := c.write(secret.Data); err != nil {
		c.log.Error(err, "webhook: copying the serving certificate from its Secret", "secret", secret.Namespace+"/"+secret.Name)
	}
}

func (c *certCopy) write(data map[string][]byte) error {
	cert, key, ca := data[certFile], data[keyFile], data[caFile]
	if len(cert) == 0 || len(key) == 0 || len(ca) == 0 {
		return nil // not made yet: the rotator fills it
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ca = bytes.Clone(ca)
	c.ca.Store(&ca)
	if bytes.Equal(cert, c.cert) {
		return nil
	}
	// The key first: the webhook server reloads on either file and keeps its
	// pair until both match.
	if err := writeFileAtomic(c.dir, keyFile, key); err != nil {
		return err
	}
	if err := writeFileAtomic(c.dir, certFile, cert); err != nil {
		return err
	}
	if c.cert == nil {
		close(c.first)
	} else {
		c.log.Info("webhook: new serving certificate from the rotator", "dir", c.dir)
	}
	c.cert = bytes.Clone(cert)
	return nil
}

// caBundle is the Secret's CA, as last seen with a good pair.
func (c *certCopy) caBundle() []byte {
	if ca := c.ca.Load(); ca != nil {
		return *ca
	}
	return nil
}

// writeFileAtomic writes a file (mode 0600) through a temporary file renamed into
// place, so the webhook server never reads half of it.
func writeFileAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("webhook: write %s: %w", name, err)
	}
	defer os.Remove(f.Name()) // a no-op once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("webhook: write %s: %w", name, err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("webhook: write %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("webhook: write %s: %w", name, err)
	}
	return os.Rename(f.Name(), filepath.Join(dir, name))
}
