package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
)

// clientAuth is the webhook server's TLS option that demands a client certificate
// from cfg.ClientCAFile (and, with cfg.ClientNames, one of those CommonNames): only
// the API server, configured to present it, completes the handshake. Without
// ClientCAFile it leaves the configuration as it is.
func clientAuth(cfg Config) (func(*tls.Config), error) {
	if cfg.ClientCAFile == "" {
		return func(*tls.Config) {}, nil
	}
	pemBytes, err := os.ReadFile(cfg.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("webhook: client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("webhook: client CA %s holds no PEM certificate", cfg.ClientCAFile)
	}
	names := slices.Clone(cfg.ClientNames)
	return func(tc *tls.Config) {
		tc.ClientAuth = tls.RequireAndVerifyClientCert
		tc.ClientCAs = pool
		if len(names) > 0 {
			tc.VerifyConnection = func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) == 0 || !slices.Contains(names, cs.PeerCertificates[0].Subject.CommonName) {
					return errors.New("webhook: client certificate not among webhook.clientNames")
				}
				return nil
			}
		}
	}, nil
}
