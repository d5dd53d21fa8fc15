package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluicehq/sluice/remediation/agent"
	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestXIDQuarantineDrainRevalidate: XID 79 on one GPU takes the node out (taint), every
// pod on it is evicted (others stay), a reboot is requested, and after the repair the
// validation pod runs and the node returns. It logs the fault -> taint and fault -> drained
// times.
func TestXIDQuarantineDrainRevalidate(t *testing.T) {
	const node, other = "h100-0", "h100-1"
	e := startEnv(t, node, other)
	pods := []string{"train-0", "train-1", "train-2"}
	for i, p := range pods {
		e.runPod(p, node, i)
	}
	e.runPod("elsewhere", other, 0)

	injected := time.Now()
	e.inject(node, &agent.Faults{XIDs: []agent.InjectedXID{{GPU: 0, XID: 79}}})
	taintedAt := e.waitNode(node, "quarantine taint", 30*time.Second, tainted)
	drainedAt := e.waitGone(30*time.Second, pods...)
	t.Logf("XID 79 injected -> node tainted: %s; -> all %d pods drained: %s",
		taintedAt.Sub(injected).Round(time.Millisecond), len(pods), drainedAt.Sub(injected).Round(time.Millisecond))

	e.waitNode(node, "repair requested", 30*time.Second, func(n *corev1.Node) bool {
		_, ok := n.Annotations[health.RepairAnnotation]
		return ok
	})
	got, _ := e.client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	req, _, err := health.ParseRepair(got.Annotations)
	if err != nil || req.Action != health.ActionNodeReboot.String() {
		t.Errorf("repair request %+v (%v), want a NodeReboot", req, err)
	}
	if state, reason := health.SlurmState(got); state != "DRAINED" || reason == "" {
		t.Errorf("sinfo state %q %q, want DRAINED with the reason", state, reason)
	}
	if c := condition(got, health.GPUXidError); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("GPUXidError = %+v, want True", c)
	}
	if !e.exists("elsewhere") {
		t.Error("a pod on a healthy node was evicted")
	}

	// The actuator reboots the node: the XID is gone when it comes back.
	repaired := time.Now()
	e.inject(node, nil)
	e.waitNode(node, "validation started", 30*time.Second, func(n *corev1.Node) bool {
		return remediation(n).Phase == health.PhaseValidating
	})
	returned := e.waitNode(node, "returned after validation", time.Minute, func(n *corev1.Node) bool {
		return !tainted(n) && remediation(n).Phase == ""
	})
	t.Logf("repair done -> validation passed, node back in service: %s", returned.Sub(repaired).Round(time.Millisecond))
	final, _ := e.client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if h := remediation(final).History; len(h) != 1 || h[0].Condition != string(health.GPUXidError) || len(h[0].XIDs) != 1 || h[0].XIDs[0] != 79 {
		t.Errorf("history %+v, want the one XID 79 fault", h)
	}
	if _, ok := final.Annotations[health.RepairAnnotation]; ok {
		t.Error("repair request left on a returned node")
	}
	// The closing record follows the node's return (the controller writes the node first).
	e2e.WaitFor(t, "the downtime interval opened then closed", 10*time.Second, func(context.Context) (bool, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		ok := len(e.downs) == 2 && e.downs[0].End.IsZero() && !e.downs[1].End.IsZero() && e.downs[1].Start.Equal(e.downs[0].Start)
		return ok, fmt.Errorf("downtime records %+v", e.downs)
	})
}

// TestGPULocalFaultEvictsOnlyThatGPU: a row remap pending on GPU 3 evicts only the pod on
// GPU 3, leaves the node in service and the other GPU's pod running, marks GPU 3 unhealthy,
// and clears when the GPU is reset.
func TestGPULocalFaultEvictsOnlyThatGPU(t *testing.T) {
	const node = "h100-2"
	e := startEnv(t, node)
	e.runPod("on-gpu3", node, 3)
	e.runPod("on-gpu5", node, 5)

	e.inject(node, &agent.Faults{GPUs: []agent.InjectedGPU{{Index: 3, RowRemapPending: true}}})
	e.waitGone(30*time.Second, "on-gpu3")
	got, _ := e.client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if tainted(got) {
		t.Error("a GPU-local fault must not quarantine the node")
	}
	req, ok, _ := health.ParseRepair(got.Annotations)
	if !ok || req.Action != health.ActionGPUReset.String() || len(req.GPUs) != 1 {
		t.Errorf("repair request %+v, want a GPUReset of one GPU", req)
	}
	gpus, _ := health.ParseGPUs(got.Annotations[health.GPUsAnnotation])
	for _, g := range gpus {
		if g.Healthy == (g.Index == 3) {
			t.Errorf("GPU %d healthy=%v with the fault on GPU 3", g.Index, g.Healthy)
		}
	}
	time.Sleep(time.Second) // give a wrong eviction the time to show
	if !e.exists("on-gpu5") {
		t.Error("the pod on healthy GPU 5 was evicted")
	}

	e.inject(node, nil)
	e.waitNode(node, "GPU back", 30*time.Second, func(n *corev1.Node) bool {
		_, pending := n.Annotations[health.RepairAnnotation]
		gpus, _ := health.ParseGPUs(n.Annotations[health.GPUsAnnotation])
		return !pending && len(gpus) == 8 && gpus[3].Healthy
	})
}

// TestDrainRespectsPDB: a pod under a PodDisruptionBudget that allows no disruption is
// not evicted while the budget refuses, and is deleted only after the drain timeout.
func TestDrainRespectsPDB(t *testing.T) {
	const node = "h100-3"
	e := startEnv(t, node)
	e.runPod("free", node, 0)
	e.runPod("guarded", node, 1)
	zero := intstr.FromInt32(0)
	if _, err := e.client.PolicyV1().PodDisruptionBudgets(e.ns).Create(context.Background(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The disruption controller must have judged the budget before it blocks anything.
	time.Sleep(2 * time.Second)

	injected := time.Now()
	e.inject(node, &agent.Faults{XIDs: []agent.InjectedXID{{GPU: 2, XID: 79}}})
	e.waitGone(30*time.Second, "free")
	// Whoever ends the pod's job must be able to tell a fault from a preemption: the pod
	// is marked before each eviction is tried, refused or not.
	e2e.WaitFor(t, "guarded pod marked with the fault", 10*time.Second, func(ctx context.Context) (bool, error) {
		p, err := e.client.CoreV1().Pods(e.ns).Get(ctx, "guarded", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		why := p.Annotations[health.NodeFaultAnnotation]
		return strings.Contains(why, "XID 79"), fmt.Errorf("%s=%q", health.NodeFaultAnnotation, why)
	})
	if !e.exists("guarded") {
		t.Fatalf("the guarded pod was evicted %s after the fault, before the 3s drain timeout", time.Since(injected))
	}
	gone := e.waitGone(30*time.Second, "guarded")
	if waited := gone.Sub(injected); waited < 3*time.Second {
		t.Errorf("guarded pod removed after %s, before the drain timeout", waited)
	}
	if !e.hasEvent(node, "DrainTimeout") {
		t.Error("no DrainTimeout event for the forced deletion")
	}
	e.inject(node, nil)
	e.waitNode(node, "returned", time.Minute, func(n *corev1.Node) bool { return !tainted(n) && remediation(n).Phase == "" })
}

// TestCircuitBreakerHolds: with XID 79 on both nodes of a two-node partition, only one
// (50%) is quarantined; the other keeps its condition, stays in service and gets a
// QuarantineDeferred event.
func TestCircuitBreakerHolds(t *testing.T) {
	nodes := []string{"a100-0", "a100-1"}
	e := startEnv(t, nodes...)
	for _, n := range nodes {
		e.inject(n, &agent.Faults{XIDs: []agent.InjectedXID{{GPU: 0, XID: 79}}})
	}
	for _, n := range nodes {
		e.waitNode(n, "GPUXidError True", 30*time.Second, func(node *corev1.Node) bool {
			c := condition(node, health.GPUXidError)
			return c != nil && c.Status == corev1.ConditionTrue
		})
	}
	e2eWait := func() (out, in []string) { return e.splitByTaint(t, nodes) }
	deadline := time.Now().Add(30 * time.Second)
	for out, _ := e2eWait(); len(out) == 0 && time.Now().Before(deadline); out, _ = e2eWait() {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // a breaker that leaks would quarantine the second by now
	out, in := e2eWait()
	if len(out) != 1 || len(in) != 1 {
		t.Fatalf("quarantined %v, in service %v; want exactly one of two", out, in)
	}
	if !e.hasEvent(in[0], "QuarantineDeferred") {
		t.Errorf("no QuarantineDeferred event on %s", in[0])
	}
	for _, n := range nodes {
		e.inject(n, nil)
	}
	e.waitNode(out[0], "returned", time.Minute, func(n *corev1.Node) bool { return !tainted(n) && remediation(n).Phase == "" })
}

// splitByTaint reads nodes and splits them into those under the quarantine taint and
// the rest, failing the test when a node cannot be read.
func (e *env) splitByTaint(t *testing.T, nodes []string) (out, in []string) {
	t.Helper()
	for _, n := range nodes {
		node, err := e.client.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if tainted(node) {
			out = append(out, n)
		} else {
			in = append(in, n)
		}
	}
	return out, in
}
