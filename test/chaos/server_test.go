package chaos

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// serverNamespace holds the Lease and the job id counter (the server's
// default, so job ids stay unique across the suite's tests).
const serverNamespace = "sluice-system"

// leaseTimings are short so a lost leader is replaced in seconds; an etcd
// pause of the suite's outage outlasts them.
var leaseTimings = map[string]any{"leaseDuration": "5s", "renewDeadline": "4s", "retryPeriod": "1s"}

// replica is one `sluice server` process on a fixed address, restarted when
// it exits (a lost Lease ends the process on purpose) as its Deployment's
// kubelet would; clients keep their address, as behind a Service.
type replica struct {
	name string
	addr string
	cfg  map[string]any

	mu       sync.Mutex
	proc     *sluiceproc.Process
	restarts int
	stopping bool
}

// site is the Sluice a fault test runs: one or more replicas sharing a
// Lease, a JWT key and a ledger.
type site struct {
	replicas []*replica
	lease    string
	ledger   string // the ledger DSN
	key      []byte
	wg       sync.WaitGroup
}

// startSite starts n replicas with ledger as their accounting DSN ("" for
// a SQLite file of the test's own); they are stopped when the test ends.
func startSite(t *testing.T, n int, ledger string) *site {
	t.Helper()
	rig := e2e.Rig(t)
	sluiceproc.InstallSite(t, rig.RESTConfig())
	dir := t.TempDir()
	if ledger == "" {
		ledger = filepath.Join(dir, "ledger.db")
	}
	key := []byte(fmt.Sprintf("chaos-key-%s-0123456789abcdef0123456789", sanitize(t.Name())))[:32]
	keyFile := filepath.Join(dir, "jwt.key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	s := &site{lease: fmt.Sprintf("chaos-%d-%s", os.Getpid(), sanitize(t.Name())), ledger: ledger, key: key}
	t.Cleanup(func() {
		s.stop()
		_ = rig.Client().CoordinationV1().Leases(serverNamespace).Delete(context.Background(), s.lease, metav1.DeleteOptions{})
	})
	for i := range n {
		name := fmt.Sprintf("replica-%c", 'a'+i)
		le := map[string]any{"enabled": true, "namespace": serverNamespace, "leaseName": s.lease}
		for k, v := range leaseTimings {
			le[k] = v
		}
		r := &replica{name: name, addr: freeAddr(t)}
		r.cfg = map[string]any{
			"kubeconfig":     rig.Kubeconfig,
			"stateDir":       filepath.Join(dir, name),
			"listen":         r.addr,
			"leaderElection": le,
			// Outside a cluster the webhook is registered by one replica's URL,
			// which dies with it (handover's reason too); nothing here needs it.
			"webhook":     map[string]any{"enabled": false},
			"rest":        map[string]any{"jwtKeyFile": keyFile},
			"accounting":  map[string]any{"dsn": ledger},
			"remediation": map[string]any{"enabled": true, "idleValidation": map[string]any{"enabled": false}},
			// alice submits the load; a fresh install refuses users it maps to no uid.
			"slurm": map[string]any{"users": map[string]any{"alice": map[string]any{"uid": 1001, "gid": 1001}}},
		}
		r.proc = sluiceproc.Launch(t, name, r.cfg)
		s.replicas = append(s.replicas, r)
		s.wg.Add(1)
		go s.supervise(t, r)
	}
	return s
}

// supervise restarts r each time it exits until the site stops, retrying
// a start that fails (the API server may still be away) a second later.
func (s *site) supervise(t *testing.T, r *replica) {
	defer s.wg.Done()
	for {
		p := r.process()
		<-p.Exited()
		if r.isStopping() {
			return
		}
		t.Logf("%s exited; restarting it as its kubelet would. Its last lines:\n%s", r.name, p.Tail(6))
		for {
			if r.isStopping() {
				return
			}
			if next := tryLaunch(t, r); next != nil {
				r.mu.Lock()
				r.proc, r.restarts = next, r.restarts+1
				stopping := r.stopping
				r.mu.Unlock()
				if stopping {
					next.Stop()
					return
				}
				break
			}
			time.Sleep(time.Second)
		}
	}
}

// tryLaunch starts r's server once: nil when it did not come up (logged).
func tryLaunch(t *testing.T, r *replica) *sluiceproc.Process {
	got := make(chan *sluiceproc.Process, 1)
	go func() {
		defer close(got) // also when Launch gives up through Fatalf
		got <- sluiceproc.Launch(logOnly{t}, r.name, r.cfg)
	}()
	return <-got
}

func (r *replica) isStopping() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopping
}

// stop stops every replica and its supervisor.
func (s *site) stop() {
	for _, r := range s.replicas {
		r.mu.Lock()
		r.stopping = true
		p := r.proc
		r.mu.Unlock()
		p.Stop()
	}
	s.wg.Wait()
}

// addrs are the replicas' REST addresses.
func (s *site) addrs() []string {
	out := make([]string, len(s.replicas))
	for i, r := range s.replicas {
		out[i] = r.addr
	}
	return out
}

func (r *replica) process() *sluiceproc.Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc
}

// restarts counts the replica restarts so far.
func (s *site) restarts() int {
	n := 0
	for _, r := range s.replicas {
		r.mu.Lock()
		n += r.restarts
		r.mu.Unlock()
	}
	return n
}

// leader is the replica holding the Lease, or nil.
func (s *site) leader(ctx context.Context, t *testing.T) *replica {
	l, err := e2e.Rig(t).Client().CoordinationV1().Leases(serverNamespace).Get(ctx, s.lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return nil
	}
	host, _ := os.Hostname()
	for _, r := range s.replicas {
		// The server's identity is "<hostname>_<pid>" (cmd/sluice/runtime.go).
		if *l.Spec.HolderIdentity == fmt.Sprintf("%s_%d", host, r.process().PID()) {
			return r
		}
	}
	return nil
}

// logOnly lets a supervisor's goroutine start a server: a failed start is
// logged and ends only that goroutine (t.Fatal may only end the test's own),
// and the supervisor tries again.
type logOnly struct{ testing.TB }

func (b logOnly) Fatal(args ...any) { b.TB.Log(args...); runtime.Goexit() }
func (b logOnly) Fatalf(format string, args ...any) {
	b.TB.Logf(format, args...)
	runtime.Goexit()
}

// freeAddr is a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// sanitize makes a test name usable in object names.
func sanitize(name string) string {
	out := []byte{}
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			out = append(out, c)
		case c >= 'A' && c <= 'Z':
			out = append(out, c+'a'-'A')
		default:
			out = append(out, '-')
		}
	}
	if len(out) > 40 {
		out = out[:40]
	}
	return string(out)
}
