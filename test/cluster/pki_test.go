package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"slices"
	"testing"
)

func TestWritePKI(t *testing.T) {
	p, err := writePKI(t.TempDir(), []string{"localhost", "127.0.0.1", "kubernetes.default.svc"})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(p.ca.certPEM)

	t.Run("apiserver serving cert", func(t *testing.T) {
		cert := loadPair(t, p.files.APIServerCert, p.files.APIServerKey)
		for _, host := range []string{"localhost", "127.0.0.1", "kubernetes.default.svc"} {
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				t.Errorf("not valid for %s: %v", host, err)
			}
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.com"}); err == nil {
			t.Error("valid for a host it was not issued for")
		}
	})

	t.Run("client identities", func(t *testing.T) {
		for name, id := range clientIdentities {
			cred := p.creds[name]
			block, _ := pem.Decode(cred.CertPEM)
			if block == nil {
				t.Fatalf("%s: no certificate", name)
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if cert.Subject.CommonName != id.user || !slices.Equal(cert.Subject.Organization, id.groups) {
				t.Errorf("%s: subject %v, want user %s groups %v", name, cert.Subject, id.user, id.groups)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("%s: not a client certificate of the rig CA: %v", name, err)
			}
			if _, err := tls.X509KeyPair(cred.CertPEM, cred.KeyPEM); err != nil {
				t.Errorf("%s: key does not match certificate: %v", name, err)
			}
		}
		if !slices.Contains(clientIdentities["admin"].groups, "system:masters") {
			t.Error("the admin kubeconfig must be in system:masters")
		}
	})

	t.Run("service account key pair", func(t *testing.T) {
		keyPEM, _ := os.ReadFile(p.files.SAKey)
		pubPEM, _ := os.ReadFile(p.files.SAPub)
		kb, _ := pem.Decode(keyPEM)
		pb, _ := pem.Decode(pubPEM)
		if kb == nil || pb == nil {
			t.Fatal("service account key files are not PEM")
		}
		key, err := x509.ParseECPrivateKey(kb.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := x509.ParsePKIXPublicKey(pb.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if !key.PublicKey.Equal(pub) {
			t.Error("sa.pub is not the public half of sa.key")
		}
	})
}

func loadPair(t *testing.T, certFile, keyFile string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
