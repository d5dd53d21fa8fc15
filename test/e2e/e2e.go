// Package e2e holds the end-to-end suites and what they share: one local rig
// (test/cluster) per test package, started by TestMain, and helpers to wait for
// the cluster to reach a state.
//
// A suite's main_test.go is just:
//
//	func TestMain(m *testing.M) { os.Exit(e2e.Main(m, cluster.DefaultSpec())) }
//
// and each test calls e2e.Rig(t) for the running cluster.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/test/cluster"
)

// shared is the package's rig: set by Main before any test runs.
var shared struct {
	mu      sync.Mutex
	cluster *cluster.Cluster
	err     error
	// beforeStop run, last registered first, after the tests and before
	// the rig stops (BeforeRigStop).
	beforeStop []func()
}

// BeforeRigStop registers f to run once the package's tests have ended and
// before Main stops the rig: for what several tests share and the rig must
// outlive, such as a `sluice server` process started by the first test that
// needs it. Functions run last registered first.
func BeforeRigStop(f func()) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.beforeStop = append(shared.beforeStop, f)
}

// runBeforeStop runs and forgets the BeforeRigStop functions.
func runBeforeStop() {
	shared.mu.Lock()
	fs := shared.beforeStop
	shared.beforeStop = nil
	shared.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// Main starts the rig with spec, runs the package's tests on it, stops it and
// checks that nothing it started is left: a leftover process or port fails the
// run. It returns the exit code for os.Exit. With -short, no rig is started and
// tests that call Rig skip. Ctrl-C (SIGINT/SIGTERM) stops the rig before
// exiting. The state dir is removed after a passing run and kept, with its
// component logs, after a failing one.
func Main(m *testing.M, spec cluster.Spec) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "sluice-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), cluster.DefaultStartTimeout)
	defer cancel()
	started := make(chan struct{})
	go stopOnSignal(cancel, started)

	began := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Spec: spec, Dir: dir, Log: os.Stderr})
	shared.mu.Lock()
	shared.cluster, shared.err = c, err
	shared.mu.Unlock()
	close(started)
	if err == nil {
		fmt.Fprintf(os.Stderr, "e2e: rig up in %s (state %s)\n", time.Since(began).Round(time.Millisecond), dir)
	}

	code := m.Run() // with a start error, every test that needs the rig fails with it
	runBeforeStop()
	if c != nil {
		c.Stop()
		if err := c.Leftovers(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: FAIL: the rig left things behind after Stop:\n%v\n", err)
			code = 1
		}
	}
	if code == 0 {
		os.RemoveAll(dir)
	} else if os.Remove(dir) != nil { // kept only when there is something to read
		fmt.Fprintf(os.Stderr, "e2e: rig state and component logs kept in %s/logs\n", dir)
	}
	return code
}

// stopOnSignal stops the rig on Ctrl-C: a start in progress is cancelled (Start
// then stops what it began), a running rig is stopped, and the process exits.
func stopOnSignal(cancelStart context.CancelFunc, started <-chan struct{}) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	s := <-sig
	fmt.Fprintf(os.Stderr, "e2e: %v: stopping the rig\n", s)
	cancelStart()
	<-started
	shared.mu.Lock()
	c := shared.cluster
	shared.mu.Unlock()
	if c != nil {
		c.Stop()
	}
	os.Exit(130)
}

// Rig returns the package's running rig. It skips the test with -short, and
// fails it when the rig did not start (for missing binaries the message names
// `make tools`).
func Rig(t testing.TB) *cluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: needs the local rig, skipped with -short")
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.err != nil {
		t.Fatalf("the rig did not start: %v", shared.err)
	}
	if shared.cluster == nil {
		t.Fatal("no rig: call e2e.Main from the package's TestMain")
	}
	return shared.cluster
}

// Namespace creates a namespace for one test, deleted when the test ends, so
// tests sharing a rig do not see each other's objects. It returns once the
// namespace's default ServiceAccount exists: until then the API server rejects
// pods, and a Job's controller would back off for seconds.
func Namespace(t testing.TB, c *cluster.Cluster) string {
	t.Helper()
	return NamespaceWith(t, c, nil)
}

// TeamNamespace is Namespace labelled team=<team>, which the seeded site's queue of that
// name admits (examples/site.yaml: a queue's spec.namespaceSelector).
func TeamNamespace(t testing.TB, c *cluster.Cluster, team string) string {
	t.Helper()
	return NamespaceWith(t, c, map[string]string{"team": team})
}

// NamespaceWith is Namespace with these labels.
func NamespaceWith(t testing.TB, c *cluster.Cluster, labels map[string]string) string {
	t.Helper()
	ns, err := c.Client().CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-", Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Client().CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	created := time.Now()
	WaitFor(t, "default ServiceAccount in "+ns.Name, time.Minute, func(ctx context.Context) (bool, error) {
		_, err := c.Client().CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) && time.Since(created) > serviceAccountGrace {
			return createDefaultServiceAccount(ctx, t, c, ns.Name)
		}
		return err == nil, err
	})
	return ns.Name
}

// serviceAccountGrace is how long NamespaceWith waits for
// kube-controller-manager to create a namespace's default ServiceAccount
// before creating it itself. The chaos suite kills the API server under it:
// its restarted RBAC cache answers Forbidden for a moment, and the
// controller's watches can back off for most of a minute after that. The
// ServiceAccount is the test's precondition, not what it tests.
const serviceAccountGrace = 15 * time.Second

// createDefaultServiceAccount creates ns's default ServiceAccount as the
// service account controller would (an AlreadyExists means it just did).
func createDefaultServiceAccount(ctx context.Context, t testing.TB, c *cluster.Cluster, ns string) (bool, error) {
	_, err := c.Client().CoreV1().ServiceAccounts(ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	switch {
	case err == nil:
		t.Logf("kube-controller-manager had not created the default ServiceAccount in %s after %s: created it", ns, serviceAccountGrace)
		return true, nil
	case apierrors.IsAlreadyExists(err):
		return true, nil
	}
	return false, err
}

// WaitFor polls done until it reports true, failing the test with what and the
// last error or state description after timeout. done returns (finished,
// description of the current state or error).
func WaitFor(t testing.TB, what string, timeout time.Duration, done func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		ok, err := done(ctx)
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not after %s (last: %v)", what, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
