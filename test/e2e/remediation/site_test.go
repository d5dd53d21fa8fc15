package remediation

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/agent"
	"github.com/sluicehq/sluice/remediation/controller"
	"github.com/sluicehq/sluice/remediation/health"
	slurmclient "github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// site is one test's Sluice on the shared rig: a `sluice server` process and an agent per
// node. Both stop when the test ends.
type site struct {
	t      *testing.T
	kube   kubernetes.Interface
	crs    client.WithWatch
	rest   *slurmclient.Client // as alice (account nlp)
	ledger string              // the server's SQLite ledger
	ns     string              // the test's namespace: validation pods, manifest pods
	faults map[string]string   // node -> its agent's fault-injection file
}

const (
	// drainTimeout is short so a test never waits minutes on a stuck eviction; no test
	// here sets a PodDisruptionBudget (remediation/controller tests that).
	drainTimeout = 10 * time.Second
	// breakerWindow is shorter than the default 5 minutes so that the breaker test can
	// wait out an earlier run's quarantines (go test -count=2) instead of failing on them.
	breakerWindow = 40 * time.Second
)

// startSite installs the CRDs and the example site, starts `sluice server` with
// remediation on and the agents of nodes, and returns once the server listens.
func startSite(t *testing.T, nodes ...string) *site {
	t.Helper()
	return startSiteWith(t, nil, nodes...)
}

// startSiteWith is startSite with more remediation settings for the server.
func startSiteWith(t *testing.T, remediation map[string]any, nodes ...string) *site {
	t.Helper()
	rig := e2e.Rig(t)
	crs := sluiceproc.InstallSite(t, rig.RESTConfig())
	s := &site{t: t, kube: rig.Client(), crs: crs, ns: e2e.TeamNamespace(t, rig, "nlp"), faults: map[string]string{}}

	dir := t.TempDir()
	keyFile, token := sluiceproc.KeyAndToken(t, dir, "alice")
	stateDir := filepath.Join(dir, "state")
	s.ledger = filepath.Join(stateDir, "ledger.db")
	rem := map[string]any{"enabled": true, "drainTimeout": drainTimeout.String(),
		"breakerWindow": breakerWindow.String(), "validationNamespace": s.ns, "validationTimeout": "2m"}
	for k, v := range remediation {
		rem[k] = v
	}
	server := sluiceproc.Start(t, "sluice server", map[string]any{
		"kubeconfig":     rig.Kubeconfig,
		"stateDir":       stateDir,
		"listen":         "127.0.0.1:0",
		"leaderElection": map[string]any{"enabled": false},
		"webhook":        map[string]any{"enabled": false},
		"rest":           map[string]any{"jwtKeyFile": keyFile},
		"slurm":          map[string]any{"users": map[string]any{"alice": map[string]any{"uid": 1001, "gid": 1001}}},
		"remediation":    rem,
	})
	s.rest = &slurmclient.Client{URL: "http://" + server.Addr(), Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(func() {
		// Jobs left over (a failed run) must not hold GPUs for later tests.
		_ = crs.DeleteAllOf(context.Background(), &v1alpha1.PodGroup{}, client.InNamespace(kube.Namespace("nlp")), client.HasLabels{v1alpha1.JobIDLabel})
	})
	s.startAgents(nodes, dir)
	return s
}

// startAgents runs one agent per node, as the DaemonSet would, until the test ends.
// Simulated nodes have no GPUs to load NVML for: each agent reads its node's inventory
// from the annotation the rig wrote and reports the faults injected through its file.
func (s *site) startAgents(nodes []string, dir string) {
	t := s.t
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, len(nodes))
	t.Cleanup(func() {
		cancel()
		for range nodes {
			<-done
		}
	})
	noDriver := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	for _, n := range nodes {
		s.faults[n] = filepath.Join(dir, n+"-faults.json")
		cfg := agent.Config{NodeName: n, RESTConfig: e2e.Rig(t).RESTConfig(), NVML: noDriver, FaultFile: s.faults[n],
			SysfsRoot: filepath.Join(dir, "no-infiniband"), PollInterval: time.Second, FaultFilePoll: 20 * time.Millisecond}
		go func() {
			defer func() { done <- struct{}{} }()
			if err := agent.Run(ctx, cfg); err != nil && ctx.Err() == nil {
				t.Errorf("agent %s: %v", n, err)
			}
		}()
	}
	for _, n := range nodes {
		s.waitNode(n, "agent reports the node healthy", time.Minute, func(node *corev1.Node) bool {
			c := condition(node, health.GPUXidError)
			return c != nil && c.Status == corev1.ConditionFalse
		})
	}
}

// inject sets the faults node's agent reports; nil heals the node.
func (s *site) inject(node string, faults *agent.Faults) {
	s.t.Helper()
	if err := agent.WriteFaults(s.faults[node], faults); err != nil {
		s.t.Fatal(err)
	}
}

// waitNode polls the node every 10 ms (fine enough to time a quarantine) until ok, and
// returns when ok was first seen.
func (s *site) waitNode(name, what string, timeout time.Duration, ok func(*corev1.Node) bool) time.Time {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		node, err := s.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && ok(node) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("node %s: %s: not after %s (last error: %v)", name, what, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *site) node(name string) *corev1.Node {
	s.t.Helper()
	n, err := s.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}

func condition(node *corev1.Node, t health.ConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if string(node.Status.Conditions[i].Type) == string(t) {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

func tainted(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == health.QuarantineTaint && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

func phase(node *corev1.Node) health.Phase {
	st, _ := health.ParseRemediation(node.Annotations)
	return st.Phase
}

// passValidation plays the diagnostic on the node's validation pod: once the controller
// has started it, the rig's kwok is told to end it successfully. It returns the pod as
// the controller created it.
func (s *site) passValidation(node string, timeout time.Duration) *corev1.Pod {
	s.t.Helper()
	var pod *corev1.Pod
	e2e.WaitFor(s.t, "validation pod on "+node, timeout, func(ctx context.Context) (bool, error) {
		list, err := s.kube.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: controller.ValidationLabel + "=" + node})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		pod = &list.Items[0]
		return true, nil
	})
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": cluster.SimulatedRun(time.Second, 0)}})
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.kube.CoreV1().Pods(s.ns).Patch(context.Background(), pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		s.t.Fatalf("pass validation pod %s: %v", pod.Name, err)
	}
	return pod
}

// hasEvent waits up to 10 s for an Event with reason on the node (events are written
// asynchronously).
func (s *site) hasEvent(node, reason string) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		list, err := s.kube.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + node + ",reason=" + reason})
		if err == nil && len(list.Items) > 0 {
			return true
		}
	}
	return false
}
