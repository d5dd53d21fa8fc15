package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// serverProcess is Sluice as installed: `sluice server` in a process of its own with its
// default configuration (admission webhook registered with the rig's API server, SQLite
// ledger and recorder, remediation controller, pod grouper, REST API). What a one-replica
// install changes is all that is set: leader election off, the webhook and the REST API
// on free loopback ports, the rig's server credentials and the webhook client CA. Each
// start gets a fresh state directory (ledger), as a new install; the webhook's CA stays in
// its Secret on the rig, as an upgrade keeps it.
//
// In backlog mode the server runs with leader election on and the harness holds the
// Lease: the webhook (on every replica) admits the backlog while the scheduler (leader
// only) waits, and the backlog starts when the harness releases the Lease, as after a
// leader's failover.
type serverProcess struct {
	command    []string // `sluice server`, its flags to be appended
	kubeconfig string   // the rig's server credentials (cluster.Cluster.ServerKubeconfig)
	clientCA   string   // cluster.Cluster.WebhookClientCA
	dir        string   // where each start's state directory and log go
	kube       kubernetes.Interface
	// noWebhook turns the webhook off (SluiceNoWebhook).
	noWebhook bool
	// holdLease: the next start waits for the harness to release the Lease (backlog).
	holdLease bool
	// extra settings merged over the harness's (the submission benchmark's REST settings).
	extra   map[string]any
	starts  int
	state   string // the last start's state directory
	logPath string // the last start's log
	proc    childProcess
}

const (
	serverNamespace = "sluice-system" // the default config's (LeaderElection.Namespace)
	serverLease     = "sluice-server"
	benchHolder     = "bench-harness"
)

func (s *serverProcess) schedulerName() string { return sluiceName }

func (s *serverProcess) start(ctx context.Context) (usageProbe, error) {
	s.starts++
	state := filepath.Join(s.dir, "server-"+strconv.Itoa(s.starts))
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, err
	}
	cfg := map[string]any{
		"kubeconfig":     s.kubeconfig,
		"stateDir":       state,
		"listen":         "127.0.0.1:0",
		"leaderElection": map[string]any{"enabled": s.holdLease},
		"webhook":        map[string]any{"addr": "127.0.0.1:0", "clientCAFile": s.clientCA},
	}
	if s.noWebhook {
		cfg["webhook"] = map[string]any{"enabled": false}
	}
	for k, v := range s.extra {
		cfg[k] = v
	}
	s.state = state
	if s.holdLease {
		if err := s.takeLease(ctx); err != nil {
			return nil, err
		}
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(state, "config.yaml")
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		return nil, err
	}
	args := append(append([]string{}, s.command[1:]...), "--config", cfgPath)
	s.logPath = filepath.Join(s.dir, "bench-server-"+strconv.Itoa(s.starts)+".log")
	return s.proc.start(s.logPath, s.command[0], args...)
}

func (s *serverProcess) stop() { s.proc.stop() }

// takeLease makes the harness the leader for an hour, so a server started now waits.
func (s *serverProcess) takeLease(ctx context.Context) error {
	_, err := s.kube.CoreV1().Namespaces().Get(ctx, serverNamespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if err := createNamespace(ctx, s.kube, serverNamespace); err != nil {
			return err
		}
	}
	leases := s.kube.CoordinationV1().Leases(serverNamespace)
	_ = leases.Delete(ctx, serverLease, metav1.DeleteOptions{})
	hour, holder := int32(3600), benchHolder
	now := metav1.NewMicroTime(time.Now())
	_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: serverLease, Namespace: serverNamespace},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &hour, AcquireTime: &now, RenewTime: &now}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("take the server's Lease: %w", err)
	}
	return nil
}

// releaseLease hands the Lease over: the waiting server takes it within its retry
// period (1 s by default) and starts its scheduler.
func (s *serverProcess) releaseLease(ctx context.Context) error {
	if !s.holdLease {
		return errors.New("bench: the server was started without the harness holding its Lease")
	}
	if err := s.kube.CoordinationV1().Leases(serverNamespace).Delete(ctx, serverLease, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("release the server's Lease: %w", err)
	}
	return nil
}

func createNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
