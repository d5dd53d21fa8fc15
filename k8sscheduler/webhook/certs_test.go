package webhook

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
)

// pair is a CA and a serving certificate for hosts made as the rotator makes them.
func pair(t *testing.T, hosts ...string) (ca, cert, key []byte) {
	t.Helper()
	r := &rotator.CertRotator{CAName: "sluice-webhook-ca", CAOrganization: "sluice", DNSName: hosts[0], ExtraDNSNames: hosts[1:],
		ExtKeyUsages: &[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	now := time.Now()
	artifacts, err := r.CreateCACert(now.Add(-time.Hour), now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err = r.CreateCertPEM(artifacts, now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return artifacts.CertPEM, cert, key
}

// The rotator's certificate verifies for every DNS host against its CA, and for no
// IP address: why Config.Hosts drops IPs and the rig's URL names localhost.
func TestRotatorCertificateNames(t *testing.T) {
	hosts := []string{"sluice-webhook.ns.svc", "sluice-webhook", "localhost"}
	ca, cert, key := pair(t, hosts...)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	leaf, err := tls.X509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: h, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
	ipCA, ipCert, ipKey := pair(t, "127.0.0.1")
	roots = x509.NewCertPool()
	roots.AppendCertsFromPEM(ipCA)
	if leaf, err = tls.X509KeyPair(ipCert, ipKey); err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}); err == nil {
		t.Error("a certificate for host 127.0.0.1 verifies for it; Config.Hosts could keep IP addresses")
	}
}

func TestCertCopy(t *testing.T) {
	dir := t.TempDir()
	var log strings.Builder
	c := newCertCopy(dir, logr.FromSlogHandler(slog.NewTextHandler(&log, nil)))
	ca, cert, key := pair(t, "localhost")

	// An empty Secret (the rotator has not filled it yet) writes nothing.
	if err := c.write(map[string][]byte{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, certFile)); !os.IsNotExist(err) || closed(c.first) || c.caBundle() != nil {
		t.Fatalf("an empty Secret was copied (stat %v)", err)
	}
	// A key of another certificate is refused, and nothing written.
	_, _, otherKey := pair(t, "localhost")
	if err := c.write(map[string][]byte{caFile: ca, certFile: cert, keyFile: otherKey}); err == nil || !strings.Contains(err.Error(), "private key does not match") {
		t.Fatalf("mismatched pair: err %v", err)
	}
	if closed(c.first) {
		t.Fatal("a mismatched pair was copied")
	}

	if err := c.write(map[string][]byte{caFile: ca, certFile: cert, keyFile: key}); err != nil {
		t.Fatal(err)
	}
	if !closed(c.first) || !bytes.Equal(c.caBundle(), ca) {
		t.Fatal("the first good pair did not make the copy ready with its CA")
	}
	assertFiles(t, dir, cert, key)
	if CertProvided(dir) {
		t.Error("the copy wrote ca.crt: the next start would take the directory for a provided certificate")
	}

	// The same pair again (every resync) writes nothing; a new one replaces both files.
	if err := c.write(map[string][]byte{caFile: ca, certFile: cert, keyFile: key}); err != nil || strings.Contains(log.String(), "new serving certificate") {
		t.Fatalf("the same pair again: err %v, log %s", err, log.String())
	}
	ca2, cert2, key2 := pair(t, "localhost")
	if err := c.write(map[string][]byte{caFile: ca2, certFile: cert2, keyFile: key2}); err != nil {
		t.Fatal(err)
	}
	assertFiles(t, dir, cert2, key2)
	if !bytes.Equal(c.caBundle(), ca2) || !strings.Contains(log.String(), "new serving certificate") {
		t.Errorf("after a rotation: CA updated %v, log %s", bytes.Equal(c.caBundle(), ca2), log.String())
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestProvidedCertificate(t *testing.T) {
	dir := t.TempDir()
	if CertProvided(dir) {
		t.Fatal("an empty directory holds a provided certificate")
	}
	ca, cert, key := pair(t, "sluice-webhook.ns.svc")
	writeTestFile(t, filepath.Join(dir, caFile), ca)
	if !CertProvided(dir) {
		t.Fatal("ca.crt does not mark the certificate provided")
	}
	if _, err := providedCA(dir); err == nil || !strings.Contains(err.Error(), certFile) {
		t.Fatalf("no serving pair: err %v", err)
	}
	writeTestFile(t, filepath.Join(dir, certFile), cert)
	writeTestFile(t, filepath.Join(dir, keyFile), key)
	got, err := providedCA(dir)
	if err != nil || !bytes.Equal(got, ca) {
		t.Fatalf("providedCA: %q, %v", got, err)
	}
	writeTestFile(t, filepath.Join(dir, caFile), []byte("not a certificate"))
	if _, err := providedCA(dir); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("a ca.crt holding no certificate: err %v", err)
	}
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// assertFiles checks the directory holds the pair, readable by its owner only.
func assertFiles(t *testing.T, dir string, cert, key []byte) {
	t.Helper()
	for name, want := range map[string][]byte{certFile: cert, keyFile: key} {
		path := filepath.Join(dir, name)
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v, want the Secret's", name, err)
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", name, info.Mode().Perm())
		}
	}
}

func writeTestFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
