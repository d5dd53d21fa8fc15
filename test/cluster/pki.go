package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is long enough for any `sluice dev` session; the rig makes new
// keys on every start, so nothing outlives it.
const certValidity = 365 * 24 * time.Hour

// authority is the rig's own certificate authority: it signs serving
// certificates and the client certificates the API server authenticates.
type authority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// keyPair is a signed certificate and its private key, PEM-encoded.
type keyPair struct {
	CertPEM, KeyPEM []byte
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func newAuthority(name string) (*authority, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour), // tolerate small clock skew
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der)}, nil
}

// issue signs a certificate for a client identity (cn, groups) or, when hosts
// is non-empty, for a server answering on those names and IPs.
func (a *authority) issue(cn string, groups []string, hosts []string) (keyPair, error) {
	key, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	serial, err := serialNumber()
	if err != nil {
		return keyPair{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: groups},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(hosts) > 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return keyPair{}, err
	}
	keyPEM, err := ecKeyPEM(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: keyPEM}, nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

func ecKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

// pkiFiles are the paths of everything the components read from the pki dir.
type pkiFiles struct {
	CACert, CAKey               string
	APIServerCert, APIServerKey string
	ServingCert, ServingKey     string // kube-controller-manager and kube-scheduler
	SAKey, SAPub                string
	// FrontProxyCACert lets the API server publish a request-header CA, which
	// kube-controller-manager and kube-scheduler expect to find; the rig runs
	// no aggregated API servers, so nothing holds a certificate from it.
	FrontProxyCACert string
	// WebhookClientCACert signed the one client certificate the API server presents
	// to admission webhooks (AdmissionConfig points its webhook plugins at a
	// kubeconfig holding it), so a webhook that trusts only this CA answers the API
	// server and nobody else.
	WebhookClientCACert string
	AdmissionConfig     string
	// KubeletClientCert is what the API server presents to kubelets (logs, exec,
	// attach); a real node's kubelet trusts the rig's CA and authorizes the
	// certificate's user, in system:masters, through the API server.
	KubeletClientCert, KubeletClientKey string
}

// credential is a client certificate the rig hands to one component.
type credential struct {
	User   string
	Groups []string
	keyPair
}

// pki holds the rig's generated keys; writePKI also leaves them on disk for the
// binaries.
type pki struct {
	ca    *authority
	files pkiFiles
	creds map[string]credential // by component / kubeconfig name
}

// clientIdentities are the users each kubeconfig authenticates as: the admin
// for tests and humans, and the same identities a kubeadm cluster gives its
// control-plane components, so the default RBAC bootstrap policy applies.
// kwok plays every kubelet; it gets the admin group rather than one node
// identity per node.
var clientIdentities = map[string]struct {
	user   string
	groups []string
}{
	"admin": {"sluice-admin", []string{"system:masters"}},
	// The Sluice server's own identity under `sluice dev`, apart from the admin's, so
	// the admission policy that keeps Sluice's labels Sluice's holds for the admin too.
	"sluice":                  {"sluice-server", []string{"system:masters"}},
	"kube-controller-manager": {"system:kube-controller-manager", nil},
	"kube-scheduler":          {"system:kube-scheduler", nil},
	"kwok":                    {"kwok", []string{"system:masters"}},
}

// writePKI generates a CA, serving certificates, a service-account signing
// key and one client certificate per identity, and writes them under dir.
func writePKI(dir string, apiServerHosts []string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := newAuthority("sluice-rig-ca")
	if err != nil {
		return nil, err
	}
	p := &pki{ca: ca, creds: map[string]credential{}}
	path := func(name string) string { return filepath.Join(dir, name) }
	p.files = pkiFiles{
		CACert: path("ca.crt"), CAKey: path("ca.key"),
		APIServerCert: path("apiserver.crt"), APIServerKey: path("apiserver.key"),
		ServingCert: path("serving.crt"), ServingKey: path("serving.key"),
		SAKey: path("sa.key"), SAPub: path("sa.pub"),
		FrontProxyCACert:    path("front-proxy-ca.crt"),
		WebhookClientCACert: path("webhook-client-ca.crt"),
		AdmissionConfig:     path("admission.yaml"),
		KubeletClientCert:   path("kubelet-client.crt"), KubeletClientKey: path("kubelet-client.key"),
	}
	frontProxy, err := newAuthority("sluice-rig-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	caKey, err := ecKeyPEM(ca.key.(*ecdsa.PrivateKey))
	if err != nil {
		return nil, err
	}
	apiServer, err := ca.issue("kube-apiserver", nil, apiServerHosts)
	if err != nil {
		return nil, err
	}
	serving, err := ca.issue("sluice-rig-component", nil, []string{"localhost", "127.0.0.1"})
	if err != nil {
		return nil, err
	}
	kubeletClient, err := ca.issue("kube-apiserver-kubelet-client", []string{"system:masters"}, nil)
	if err != nil {
		return nil, err
	}
	saKey, err := newKey()
	if err != nil {
		return nil, err
	}
	saKeyPEM, err := ecKeyPEM(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		p.files.CACert: ca.certPEM, p.files.CAKey: caKey,
		p.files.APIServerCert: apiServer.CertPEM, p.files.APIServerKey: apiServer.KeyPEM,
		p.files.ServingCert: serving.CertPEM, p.files.ServingKey: serving.KeyPEM,
		p.files.SAKey: saKeyPEM, p.files.SAPub: pemBlock("PUBLIC KEY", saPubDER),
		p.files.FrontProxyCACert:  frontProxy.certPEM,
		p.files.KubeletClientCert: kubeletClient.CertPEM, p.files.KubeletClientKey: kubeletClient.KeyPEM,
	}
	if err := writeWebhookClientAuth(p.files, path("webhook-client.kubeconfig")); err != nil {
		return nil, err
	}
	for name, f := range files {
		if err := os.WriteFile(name, f, 0o600); err != nil {
			return nil, err
		}
	}
	for name, id := range clientIdentities {
		kp, err := ca.issue(id.user, id.groups, nil)
		if err != nil {
			return nil, fmt.Errorf("client certificate for %s: %w", name, err)
		}
		p.creds[name] = credential{User: id.user, Groups: id.groups, keyPair: kp}
	}
	return p, nil
}
