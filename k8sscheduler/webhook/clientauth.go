package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
)

// clientAuth makes the serving TLS configuration demand a client certificate from
// cfg.ClientCAFile (and, with cfg.ClientNames, one of those CommonNames): only the API
// server, configured to present it, completes the handshake. nil leaves the
// configuration as it is (no ClientCAFile).
func clientAuth(cfg Config, tc *tls.Config) error {
	if cfg.ClientCAFile == "" {
		return nil
	}
	pemBytes, err := os.ReadFile(cfg.ClientCAFile)
	if err != nil {
		return fmt.Errorf("webhook: client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return fmt.Errorf("webhook: client CA %s holds no PEM certificate", cfg.ClientCAFile)
	}
	tc.ClientAuth = tls.RequireAndVerifyClientCert
	tc.ClientCAs = pool
	if len(cfg.ClientNames) > 0 {
		names := slices.Clone(cfg.ClientNames)
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !slices.Contains(names, cs.PeerCertificates[0].Subject.CommonName) {
				return errors.New("webhook: client certificate not among webhook.clientNames")
			}
			return nil
		}
	}
	return nil
}
