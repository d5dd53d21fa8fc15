package handover

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi"
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
// replicas share the Lease, the JWT key and the ledger (one SQLite file, as
// replicas on one node share the state volume; only the leader records into
// it); the webhook is off because outside a cluster it is registered by URL,
// one replica's, which dies with it (in a cluster a Service fronts every
// replica).
func replicaConfig(kubeconfig, stateDir, ledger, leaseNS, leaseName, jwtKey string) map[string]any {
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
		"accounting":     map[string]any{"dsn": ledger},
		// alice submits; a fresh install refuses users it maps to no uid.
		"slurm": map[string]any{"users": map[string]any{"alice": map[string]any{"uid": 1001, "gid": 1001}}},
	}
}

// recorderStarted reports whether the replica's log shows its accounting
// recorder starting (cmd/sluice/runtime.go logs each component it starts).
func (r *replica) recorderStarted() bool {
	return strings.Contains(r.Log(), "component=accounting-recorder")
}

// awaitSacct waits up to a minute until sacct through r's REST API
// (slurmdb/jobs, read from the ledger) lists every one of alice's jobs.
func (r *replica) awaitSacct(t *testing.T, key []byte, jobs []int) {
	t.Helper()
	tok, err := slurmapi.MintToken(key, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, fmt.Sprintf("%s: sacct lists jobs %v", r.Name(), jobs), time.Minute, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Addr()+"/slurmdb/v0.0.44/jobs", nil)
		if err != nil {
			return false, err
		}
		req.Header.Set("X-SLURM-USER-TOKEN", tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		var doc struct {
			Jobs []struct {
				JobID int `json:"job_id"`
			} `json:"jobs"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("slurmdb/jobs: %s %v", resp.Status, err)
		}
		listed := map[int]bool{}
		for _, j := range doc.Jobs {
			listed[j.JobID] = true
		}
		for _, id := range jobs {
			if !listed[id] {
				return false, fmt.Errorf("job %d not listed (%d jobs)", id, len(doc.Jobs))
			}
		}
		return true, nil
	})
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
