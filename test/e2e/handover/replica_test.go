package handover

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// replica is one `sluice server` process (its own state directory, port and
// process group) and the identity it holds the Lease under.
type replica struct {
	*sluiceproc.Process
	identity string // its Lease holder identity
}

// leaseTimings are short so a hand-over takes seconds, not the defaults'
// 15 s + retries; still well above what one renewal costs on a loaded rig.
var leaseTimings = map[string]string{"leaseDuration": "5s", "renewDeadline": "4s", "retryPeriod": "1s"}

// replicaConfig is the server's configuration for one replica. Both
// replicas share the Lease and the JWT key; the webhook is off because
// outside a cluster it is registered by URL, one replica's, which dies with
// it (in a cluster a Service fronts every replica).
func replicaConfig(kubeconfig, stateDir, leaseNS, leaseName, jwtKey string) map[string]any {
	le := map[string]any{"enabled": true, "namespace": leaseNS, "leaseName": leaseName}
	for k, v := range leaseTimings {
		le[k] = v
	}
	return map[string]any{
		"kubeconfig":     kubeconfig,
		"stateDir":       stateDir,
		"listen":         "127.0.0.1:0",
		"leaderElection": le,
		"webhook":        map[string]any{"enabled": false},
		"rest":           map[string]any{"jwtKeyFile": jwtKey},
	}
}

// startReplica runs `sluice server` with cfg and returns once it listens;
// it is stopped when the test ends.
func startReplica(t *testing.T, name string, cfg map[string]any) *replica {
	t.Helper()
	p := sluiceproc.Start(t, name, cfg)
	// The server's identity is "<hostname>_<pid>" (cmd/sluice/runtime.go).
	host, _ := os.Hostname()
	return &replica{Process: p, identity: fmt.Sprintf("%s_%d", host, p.PID())}
}

// metrics scrapes the replica's /metrics: every series without labels
// (counters, a histogram's _count) by name.
func (r *replica) metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Addr()+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s /metrics: %s", r.Name(), resp.Status)
	}
	return parseUnlabelled(resp.Body)
}

// mustMetric scrapes one series, failing the test if it is missing.
func (r *replica) mustMetric(t *testing.T, name string) float64 {
	t.Helper()
	m, err := r.metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, ok := m[name]
	if !ok {
		t.Fatalf("%s /metrics has no %s", r.Name(), name)
	}
	return v
}

// awaitMetric waits up to 10 s for a series to reach want and fails the test with what it
// last read otherwise. Counters trail what a watch sees: a Slurm pod created already bound
// is visible before the create call returns and the scheduler counts it.
func (r *replica) awaitMetric(t *testing.T, name string, want float64, what string) {
	t.Helper()
	var got float64
	e2e.WaitFor(t, fmt.Sprintf("%s: %s (%s = %v)", r.Name(), what, name, want), 10*time.Second, func(ctx context.Context) (bool, error) {
		m, err := r.metrics(ctx)
		if err != nil {
			return false, err
		}
		got = m[name]
		return got == want, fmt.Errorf("%s = %v", name, got)
	})
}

// parseUnlabelled reads the Prometheus text format's "name value" lines.
func parseUnlabelled(body io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 || strings.HasPrefix(fields[0], "#") || strings.Contains(fields[0], "{") {
			continue
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", fields[0], err)
		}
		out[fields[0]] = v
	}
	return out, sc.Err()
}
