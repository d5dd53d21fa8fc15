package webhook

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// Lifetimes. The CA is long-lived because replacing it means re-registering
// its bundle with the API server, which only happens at startup; the serving
// certificate is short-lived and is replaced while running.
const (
	caValidity         = 10 * 365 * 24 * time.Hour
	caRenewBefore      = 365 * 24 * time.Hour
	servingValidity    = 365 * 24 * time.Hour
	servingRenewBefore = 30 * 24 * time.Hour
	// clockSkew backdates NotBefore so an API server whose clock runs a
	// little behind still accepts a certificate made a moment ago.
	clockSkew = time.Hour
)

// File names in the state directory.
const (
	caCertFile      = "webhook-ca.crt"
	caKeyFile       = "webhook-ca.key"
	servingCertFile = "webhook.crt"
	servingKeyFile  = "webhook.key"
)

// certStore holds the webhook's CA and its current serving certificate.
// The serving certificate is swapped atomically; handshakes read it through
// getCertificate.
type certStore struct {
	dir   string
	hosts []string

	caPEM  []byte
	caCert *x509.Certificate
	caKey  crypto.Signer

	serving atomic.Pointer[tls.Certificate]
}

// loadOrCreateCerts reuses the CA and serving certificate in dir when they
// are intact and not due for renewal at now (and the serving one covers
// hosts), and writes new ones otherwise. A damaged file is replaced, not an
// error: it holds nothing that cannot be made again. what lists the files it
// (re)generated and why, for the log.
func loadOrCreateCerts(dir string, hosts []string, now time.Time) (store *certStore, what []string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("webhook: state directory: %w", err)
	}
	s := &certStore{dir: dir, hosts: hosts}
	if why := s.loadCA(now); why != "" {
		if err := s.createCA(now); err != nil {
			return nil, nil, err
		}
		what = append(what, "new CA: "+why)
	}
	renewed, err := s.renewServingIfDue(now)
	if err != nil {
		return nil, nil, err
	}
	if renewed != "" {
		what = append(what, "new serving certificate: "+renewed)
	}
	return s, what, nil
}

// loadCA loads the CA from disk, returning why it cannot be used ("" when it can).
func (s *certStore) loadCA(now time.Time) string {
	ca, key, why := readPair(filepath.Join(s.dir, caCertFile), filepath.Join(s.dir, caKeyFile))
	if why != "" {
		return why
	}
	switch {
	case !ca.IsCA:
		return caCertFile + " is not a CA certificate"
	case now.Before(ca.NotBefore):
		return caCertFile + " is not valid yet"
	case now.Add(caRenewBefore).After(ca.NotAfter):
		return fmt.Sprintf("%s expires %s", caCertFile, ca.NotAfter.Format(time.RFC3339))
	}
	s.caCert, s.caKey = ca, key
	s.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	return ""
}

func (s *certStore) createCA(now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "sluice-webhook-ca"},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := sign(tmpl, tmpl, key.Public(), key)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	if err := writePair(s.dir, caCertFile, caKeyFile, der, key); err != nil {
		return err
	}
	s.caCert, s.caKey = ca, key
	s.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return nil
}

// renewServingIfDue makes sure the store holds a serving certificate signed
// by the CA, covering every host and not due for renewal at now: it loads
// the one on disk, or writes a new one. It returns why it made a new one
// ("" when the current one is kept).
func (s *certStore) renewServingIfDue(now time.Time) (string, error) {
	if cur := s.serving.Load(); cur != nil && s.servingProblem(cur.Leaf, now) == "" {
		return "", nil
	}
	certFile, keyFile := filepath.Join(s.dir, servingCertFile), filepath.Join(s.dir, servingKeyFile)
	cert, key, why := readPair(certFile, keyFile)
	if why == "" {
		why = s.servingProblem(cert, now)
	}
	if why == "" {
		s.serving.Store(&tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert})
		return "", nil
	}
	return why, s.createServing(now)
}

// servingProblem says why cert cannot serve at now ("" when it can).
func (s *certStore) servingProblem(cert *x509.Certificate, now time.Time) string {
	if err := cert.CheckSignatureFrom(s.caCert); err != nil {
		return servingCertFile + " is not signed by the current CA"
	}
	if now.Before(cert.NotBefore) {
		return servingCertFile + " is not valid yet"
	}
	// A certificate cut short by the CA's own expiry is renewed once the
	// CA is, at the next start.
	if now.Add(servingRenewBefore).After(cert.NotAfter) && cert.NotAfter.Before(s.caCert.NotAfter) {
		return fmt.Sprintf("%s expires %s", servingCertFile, cert.NotAfter.Format(time.RFC3339))
	}
	for _, h := range s.hosts {
		if err := cert.VerifyHostname(h); err != nil {
			return fmt.Sprintf("%s does not cover %s", servingCertFile, h)
		}
	}
	return ""
}

func (s *certStore) createServing(now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	notAfter := now.Add(servingValidity)
	if notAfter.After(s.caCert.NotAfter) {
		notAfter = s.caCert.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "sluice-webhook"},
		NotBefore:   now.Add(-clockSkew),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range s.hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := sign(tmpl, s.caCert, key.Public(), s.caKey)
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	if err := writePair(s.dir, servingCertFile, servingKeyFile, der, key); err != nil {
		return err
	}
	s.serving.Store(&tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf})
	return nil
}

func (s *certStore) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.serving.Load(), nil
}

// sign issues a certificate from tmpl with a random 128-bit serial number.
func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
}

// readPair reads a PEM certificate and its PKCS#8 key, returning why they
// cannot be used ("" when they can).
func readPair(certPath, keyPath string) (*x509.Certificate, crypto.Signer, string) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, describeReadError(certPath, err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, describeReadError(keyPath, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM) // also checks that the key matches
	if err != nil {
		return nil, nil, fmt.Sprintf("%s and %s: %v", filepath.Base(certPath), filepath.Base(keyPath), err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, filepath.Base(keyPath) + " holds no signing key"
	}
	return pair.Leaf, signer, ""
}

func describeReadError(path string, err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return filepath.Base(path) + " does not exist"
	}
	return err.Error()
}

// writePair writes a certificate and its key, each through a temporary file
// renamed into place, so a crash never leaves half a file behind.
func writePair(dir, certName, keyName string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(dir, keyName, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})); err != nil {
		return err
	}
	return writeFileAtomic(dir, certName, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

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

// caBundle is the PEM of the CA, for the webhook configuration's caBundle.
func (s *certStore) caBundle() []byte { return bytes.Clone(s.caPEM) }
