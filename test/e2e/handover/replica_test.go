package handover

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/test/e2e"
)

// replica is one `sluice server` process: its own state directory (SQLite
// ledger, webhook certificates), its own port, in its own process group.
type replica struct {
	name     string
	cmd      *exec.Cmd
	log      *syncBuffer
	exited   chan struct{} // closed once the process has been reaped
	addr     string        // host:port of its REST API and /metrics
	identity string        // its Lease holder identity
}

// leaseTimings are short so a hand-over takes seconds, not the defaults'
// 15 s + retries; still well above what one renewal costs on a loaded rig.
var leaseTimings = map[string]string{"leaseDuration": "5s", "renewDeadline": "4s", "retryPeriod": "1s"}

// replicaConfig is the server's configuration file for one replica. Both
// replicas share the Lease and the JWT key; the webhook is off because
// outside a cluster it is registered by URL, one replica's, which dies with
// it (in a cluster a Service fronts every replica).
func replicaConfig(t *testing.T, kubeconfig, stateDir, leaseNS, leaseName, jwtKey string) []byte {
	t.Helper()
	le := map[string]any{"enabled": true, "namespace": leaseNS, "leaseName": leaseName}
	for k, v := range leaseTimings {
		le[k] = v
	}
	data, err := yaml.Marshal(map[string]any{
		"kubeconfig":     kubeconfig,
		"stateDir":       stateDir,
		"listen":         "127.0.0.1:0",
		"leaderElection": le,
		"webhook":        map[string]any{"enabled": false},
		"rest":           map[string]any{"jwtKeyFile": jwtKey},
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// startReplica runs `sluice server --config cfg` and returns once it listens.
// The process is stopped when the test ends (SIGTERM, then SIGKILL to its
// group), and its log is printed if the test failed.
func startReplica(t *testing.T, bin, name string, cfg []byte) *replica {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, log: &syncBuffer{}, exited: make(chan struct{})}
	r.cmd = exec.Command(bin, "server", "--config", cfgPath)
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	// Its own group, so a kill reaches anything it spawned; and killed by the
	// kernel if `go test` itself dies before the cleanup runs.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			t.Logf("%s (pid %d) log, last lines:\n%s", r.name, r.cmd.Process.Pid, r.log.tail(80))
		}
	})
	// The server's identity is "<hostname>_<pid>" (cmd/sluice/runtime.go).
	host, _ := os.Hostname()
	r.identity = fmt.Sprintf("%s_%d", host, r.cmd.Process.Pid)
	e2e.WaitFor(t, name+" listening", time.Minute, func(context.Context) (bool, error) {
		if r.gone() {
			t.Fatalf("%s exited before listening:\n%s", name, r.log.tail(80))
		}
		r.addr = r.log.servingAddr()
		return r.addr != "", nil
	})
	return r
}

func (r *replica) gone() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// kill ends the replica at once, as a crashed node or an OOM kill would:
// no Lease release, no graceful shutdown.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", r.name, err)
	}
	<-r.exited
}

// terminate sends SIGTERM, as a rolling update does, waits for the exit
// and returns its code (-1 when it had to be killed after 15 s).
func (r *replica) terminate(t *testing.T) int {
	t.Helper()
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatalf("terminate %s: %v", r.name, err)
	}
	select {
	case <-r.exited:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(15 * time.Second):
		r.stop()
		return -1
	}
}

// stop asks the replica to shut down, then kills its group after 15 s. A
// replica already reaped is left alone: its PID may belong to another
// process by now.
func (r *replica) stop() {
	if r.gone() {
		return
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.exited
	}
}

// metrics scrapes the replica's /metrics: every series without labels
// (counters, a histogram's _count) by name.
func (r *replica) metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s /metrics: %s", r.name, resp.Status)
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
		t.Fatalf("%s /metrics has no %s", r.name, name)
	}
	return v
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

// servingRE finds the address in the server's "serving" log line.
var servingRE = regexp.MustCompile(`msg=serving addr=(\S+)`)

// syncBuffer collects a replica's output, written by exec's copying
// goroutines while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) servingAddr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := servingRE.FindSubmatch(b.buf.Bytes()); m != nil {
		return string(m[1])
	}
	return ""
}

// tail is the last n lines, enough to see why a replica failed.
func (b *syncBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimRight(b.buf.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
