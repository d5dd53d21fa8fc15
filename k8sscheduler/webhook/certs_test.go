package webhook

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestLoadOrCreateCerts(t *testing.T) {
	hosts := []string{"127.0.0.1", "sluice-webhook.sluice.svc"}
	tests := []struct {
		name string
		// prepare changes the state directory (first created at t0) and
		// returns the time and hosts of the second load.
		prepare     func(t *testing.T, dir string) (time.Time, []string)
		wantNewCA   bool
		wantNewCert bool
		wantWhy     string // substring of the reason logged
	}{
		{name: "restart reuses both", prepare: func(*testing.T, string) (time.Time, []string) { return t0.Add(24 * time.Hour), hosts }},
		{name: "serving certificate due", wantNewCert: true, wantWhy: "webhook.crt expires",
			prepare: func(*testing.T, string) (time.Time, []string) {
				return t0.Add(servingValidity - servingRenewBefore + time.Hour), hosts
			}},
		{name: "CA due", wantNewCA: true, wantNewCert: true, wantWhy: "webhook-ca.crt expires",
			prepare: func(*testing.T, string) (time.Time, []string) {
				return t0.Add(caValidity - caRenewBefore + time.Hour), hosts
			}},
		{name: "new host", wantNewCert: true, wantWhy: "does not cover localhost",
			prepare: func(*testing.T, string) (time.Time, []string) { return t0, append([]string{"localhost"}, hosts...) }},
		{name: "damaged CA", wantNewCA: true, wantNewCert: true, wantWhy: "webhook-ca.crt and webhook-ca.key",
			prepare: func(t *testing.T, dir string) (time.Time, []string) {
				writeTestFile(t, filepath.Join(dir, caCertFile), "garbage")
				return t0, hosts
			}},
		{name: "missing serving key", wantNewCert: true, wantWhy: "webhook.key does not exist",
			prepare: func(t *testing.T, dir string) (time.Time, []string) {
				if err := os.Remove(filepath.Join(dir, servingKeyFile)); err != nil {
					t.Fatal(err)
				}
				return t0, hosts
			}},
		{name: "key of another certificate", wantNewCert: true, wantWhy: "private key does not match",
			prepare: func(t *testing.T, dir string) (time.Time, []string) {
				copyTestFile(t, filepath.Join(dir, caKeyFile), filepath.Join(dir, servingKeyFile))
				return t0, hosts
			}},
		{name: "serving certificate of another CA", wantNewCert: true, wantWhy: "not signed by the current CA",
			prepare: func(t *testing.T, dir string) (time.Time, []string) {
				other := t.TempDir()
				if _, _, err := loadOrCreateCerts(other, hosts, t0); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{servingCertFile, servingKeyFile} {
					copyTestFile(t, filepath.Join(other, f), filepath.Join(dir, f))
				}
				return t0, hosts
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			first, why, err := loadOrCreateCerts(dir, hosts, t0)
			if err != nil {
				t.Fatal(err)
			}
			if len(why) != 2 {
				t.Fatalf("first start: %q, want a new CA and serving certificate", why)
			}
			assertServes(t, first, hosts, t0)
			assertPrivate(t, dir)

			now, hosts2 := tt.prepare(t, dir)
			second, why, err := loadOrCreateCerts(dir, hosts2, now)
			if err != nil {
				t.Fatal(err)
			}
			if gotNewCA := !bytes.Equal(first.caBundle(), second.caBundle()); gotNewCA != tt.wantNewCA {
				t.Errorf("new CA = %v, want %v (%q)", gotNewCA, tt.wantNewCA, why)
			}
			gotNewCert := !bytes.Equal(first.serving.Load().Certificate[0], second.serving.Load().Certificate[0])
			if gotNewCert != tt.wantNewCert {
				t.Errorf("new serving certificate = %v, want %v (%q)", gotNewCert, tt.wantNewCert, why)
			}
			if joined := strings.Join(why, "; "); !strings.Contains(joined, tt.wantWhy) {
				t.Errorf("reasons %q do not mention %q", joined, tt.wantWhy)
			}
			assertServes(t, second, hosts2, now)
			// What was written is what the next start finds.
			third, why, err := loadOrCreateCerts(dir, hosts2, now)
			if err != nil || len(why) != 0 || !bytes.Equal(third.caBundle(), second.caBundle()) {
				t.Errorf("third start regenerated %q (err %v), want the second's files reused", why, err)
			}
		})
	}
}

func TestRenewServingWhileRunning(t *testing.T) {
	hosts := []string{"127.0.0.1"}
	s, _, err := loadOrCreateCerts(t.TempDir(), hosts, t0)
	if err != nil {
		t.Fatal(err)
	}
	before := s.serving.Load()
	if why, err := s.renewServingIfDue(t0.Add(300 * 24 * time.Hour)); err != nil || why != "" {
		t.Fatalf("renewed %q (err %v) with 65 days left, want kept", why, err)
	}
	due := t0.Add(340 * 24 * time.Hour)
	why, err := s.renewServingIfDue(due)
	if err != nil || why == "" {
		t.Fatalf("renewed %q (err %v) with 25 days left, want a new certificate", why, err)
	}
	after, _ := s.getCertificate(nil)
	if after == before || !after.Leaf.NotAfter.After(due.Add(servingRenewBefore)) {
		t.Fatalf("handshakes still get the old certificate (expires %s)", after.Leaf.NotAfter)
	}
	assertServes(t, s, hosts, due)
}

// assertServes checks that a client trusting only the store's CA bundle
// accepts its serving certificate for every host at now.
func assertServes(t *testing.T, s *certStore, hosts []string, now time.Time) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.caBundle()) {
		t.Fatal("CA bundle holds no certificate")
	}
	cert, err := s.getCertificate(&tls.ClientHelloInfo{})
	if err != nil || cert == nil {
		t.Fatalf("no serving certificate: %v", err)
	}
	for _, h := range hosts {
		opts := x509.VerifyOptions{Roots: roots, DNSName: h, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		if _, err := cert.Leaf.Verify(opts); err != nil {
			t.Errorf("certificate for %s at %s: %v", h, now.Format(time.DateOnly), err)
		}
	}
}

// assertPrivate checks that keys are readable by their owner only.
func assertPrivate(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{caKeyFile, servingKeyFile} {
		info, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, info.Mode().Perm())
		}
	}
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyTestFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, to, string(data))
}
