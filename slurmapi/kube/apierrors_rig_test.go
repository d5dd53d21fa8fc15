package kube

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/openapi/openapitest"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestKubernetesFaultsOnRig submits through servers whose Kubernetes API
// is unreachable or refuses the server's identity: the client gets 503
// with Retry-After, or 502 naming what RBAC lacks, never a bare 500.
func TestKubernetesFaultsOnRig(t *testing.T) {
	rig := e2e.Rig(t)
	rigServer(t) // CRDs and the seed site
	unreachable := rest.CopyConfig(rig.RESTConfig())
	unreachable.Host = "https://127.0.0.1:1"
	unreachable.Timeout = 5 * time.Second
	unprivileged := rest.CopyConfig(rig.RESTConfig())
	unprivileged.Impersonate = rest.ImpersonationConfig{UserName: "sluice-without-rbac"}
	cases := []struct {
		name       string
		cfg        *rest.Config
		withLedger bool
		status     int
		retryAfter bool
		mentions   string
	}{
		{"API server down", unreachable, false, http.StatusServiceUnavailable, true, "Kubernetes API is unavailable"},
		{"API server down, backend behind the ledger", unreachable, true, http.StatusServiceUnavailable, true, "Kubernetes API is unavailable"},
		{"server lacks RBAC", unprivileged, false, http.StatusBadGateway, false, "does not allow it to list partitions.scheduling.sluice.dev"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := New(c.cfg, Options{Namespace: "default"})
			if err != nil {
				t.Fatal(err)
			}
			var backend slurmapi.Backend = b
			if c.withLedger {
				backend = slurmapi.WithLedger(b, nil) // submissions never read the ledger
			}
			srv, err := slurmapi.NewServer(slurmapi.Config{Auth: slurmapi.AuthConfig{Key: rigKey}}, backend)
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			tok, _ := slurmapi.MintToken(rigKey, "alice", time.Hour)
			req, _ := http.NewRequest("POST", ts.URL+"/slurm/v0.0.44/job/submit", strings.NewReader(gpuJob))
			req.Header.Set("X-SLURM-USER-TOKEN", tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body := new(strings.Builder)
			_, _ = io.Copy(body, resp.Body)
			openapitest.Check(t, "POST", "/slurm/v0.0.44/job/submit", resp.StatusCode, []byte(body.String()))
			if resp.StatusCode != c.status || (resp.Header.Get("Retry-After") != "") != c.retryAfter || !strings.Contains(body.String(), c.mentions) {
				t.Errorf("status %d, Retry-After %q, body %s; want %d, Retry-After %v, mentioning %q",
					resp.StatusCode, resp.Header.Get("Retry-After"), body, c.status, c.retryAfter, c.mentions)
			}
		})
	}
}
