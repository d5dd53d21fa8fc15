package controller_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/remediation/agent"
	"github.com/sluicehq/sluice/remediation/controller"
	"github.com/sluicehq/sluice/remediation/health"
)

// TestCircuitBreakerBoundsGPUResets: a GPU-local fault (a reset needed) on both nodes of a
// two-node partition at once takes out only one node's GPU (50%): the other node keeps its
// pod on the faulty GPU, gets no repair request and a QuarantineDeferred Event, as a node
// quarantine past the breaker would.
func TestCircuitBreakerBoundsGPUResets(t *testing.T) {
	nodes := []string{"a100-0", "a100-1"}
	e := startEnv(t, nodes...)
	pods := map[string]string{"a100-0": "reset-0", "a100-1": "reset-1"}
	for n, p := range pods {
		e.runPod(p, n, 1)
	}
	for _, n := range nodes {
		e.inject(n, &agent.Faults{GPUs: []agent.InjectedGPU{{Index: 1, RowRemapPending: true}}})
	}
	for _, n := range nodes {
		e.waitNode(n, "GPURowRemapPending True", 30*time.Second, func(node *corev1.Node) bool {
			c := condition(node, health.GPURowRemapPending)
			return c != nil && c.Status == corev1.ConditionTrue
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for e.exists(pods["a100-0"]) && e.exists(pods["a100-1"]) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // a breaker that leaks would evict the second by now
	var reset, held []string
	for _, n := range nodes {
		if e.exists(pods[n]) {
			held = append(held, n)
		} else {
			reset = append(reset, n)
		}
	}
	if len(reset) != 1 || len(held) != 1 {
		t.Fatalf("GPU taken out on %v, kept on %v; want exactly one of two", reset, held)
	}
	got, err := e.client.CoreV1().Nodes().Get(context.Background(), held[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Annotations[health.RepairAnnotation]; ok {
		t.Errorf("%s got a repair request past the breaker", held[0])
	}
	if !e.hasEvent(held[0], "QuarantineDeferred") {
		t.Errorf("no QuarantineDeferred event on %s", held[0])
	}
	for _, n := range nodes {
		e.inject(n, nil)
	}
	for _, n := range nodes {
		e.waitNode(n, "no repair left", 30*time.Second, func(node *corev1.Node) bool {
			_, pending := node.Annotations[health.RepairAnnotation]
			return !pending && !tainted(node)
		})
	}
}

// TestDrainMovesOnPastStuckTerminating: a pod whose kubelet no longer answers stays
// terminating after its eviction. The drain waits for it only TerminatingTimeout past its
// deletion time, then force-deletes it (a DrainStuck Event) and the node moves on to
// await its repair.
func TestDrainMovesOnPastStuckTerminating(t *testing.T) {
	const node = "h100-1"
	e := startEnvWith(t, func(c *controller.Config) {
		c.TerminatingTimeout = 2 * time.Second
		c.BreakerShare = 1 // earlier tests' quarantines in this partition must not hold this one
	}, node)
	// A grace period, so the eviction leaves the pod terminating rather than gone at once.
	grace := int64(1)
	e.runPodWith("unreachable", node, 0, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &grace })
	// The rig's kwok kubelet leaves a pod in phase Unknown alone, as a dead kubelet would.
	pod, err := e.client.CoreV1().Pods(e.ns).Get(context.Background(), "unreachable", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodUnknown
	if _, err := e.client.CoreV1().Pods(e.ns).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	injected := time.Now()
	e.inject(node, &agent.Faults{XIDs: []agent.InjectedXID{{GPU: 0, XID: 79}}})
	e.waitNode(node, "awaiting repair", 30*time.Second, func(n *corev1.Node) bool {
		return remediation(n).Phase == health.PhaseAwaitingRepair
	})
	if waited := time.Since(injected); waited < 2*time.Second {
		t.Errorf("node moved on after %s, before the terminating timeout", waited)
	}
	if !e.hasEvent(node, "DrainStuck") {
		t.Error("no DrainStuck event for the force-deleted pod")
	}
	e.waitGone(10*time.Second, "unreachable")
	e.inject(node, nil)
	e.waitNode(node, "returned", time.Minute, func(n *corev1.Node) bool { return !tainted(n) && remediation(n).Phase == "" })
}
