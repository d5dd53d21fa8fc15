package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/controller"
	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/test/e2e"
)

// idleOnly validates only the given partition's idle nodes, every interval.
func idleOnly(partition string, interval time.Duration, maxNodes int, exitCode, duration string) func(*controller.Config) {
	return func(c *controller.Config) {
		c.IdleValidation = controller.IdleValidation{Interval: -1, Check: 100 * time.Millisecond,
			Partitions: map[string]controller.IdleSchedule{partition: {Interval: interval, MaxNodes: maxNodes}}}
		c.Validation.Annotations = map[string]string{v1alpha1.SimDurationAnnotation: duration, v1alpha1.SimExitCodeAnnotation: exitCode}
	}
}

// resetNodes puts the nodes back as the rig made them once the test's controller has
// stopped (registered before it, so it runs after), for the tests that follow.
func resetNodes(t *testing.T, nodes ...string) {
	t.Cleanup(func() {
		client := e2e.Rig(t).Client()
		for _, n := range nodes {
			node, err := client.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
			if err != nil {
				t.Errorf("reset %s: %v", n, err)
				continue
			}
			for _, k := range []string{health.RemediationAnnotation, health.RepairAnnotation, health.LastValidationAnnotation} {
				delete(node.Annotations, k)
			}
			kept := node.Spec.Taints[:0]
			for _, taint := range node.Spec.Taints {
				if taint.Key != health.QuarantineTaint {
					kept = append(kept, taint)
				}
			}
			node.Spec.Taints = kept
			if _, err := client.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{}); err != nil {
				t.Errorf("reset %s: %v", n, err)
			}
			patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{
				{"type": string(health.ValidationFailed), "$patch": "delete"}}}})
			if _, err := client.CoreV1().Nodes().Patch(context.Background(), n, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
				t.Errorf("reset %s conditions: %v", n, err)
			}
		}
	})
}

func lastValidation(n *corev1.Node) health.ValidationRun {
	v, _, _ := health.ParseLastValidation(n.Annotations)
	return v
}

// TestIdleValidationOnSchedule: idle nodes of a partition are validated on schedule, all
// four at once (MaxNodes 4); a validation whose pod is removed before it ends (what the
// scheduler does when a job takes the node) is recorded Preempted and leaves the node's
// ValidationFailed condition alone; the others pass: condition False/Passed, the last
// validation on the node with its duration.
func TestIdleValidationOnSchedule(t *testing.T) {
	nodes := []string{"h100-0", "h100-1", "h100-2", "h100-3"}
	resetNodes(t, nodes...)
	e := startEnvWith(t, idleOnly("h100", 2*time.Second, 4, "0", "3s"))
	var preempted string
	e2e.WaitFor(t, "an idle validation running", 30*time.Second, func(ctx context.Context) (bool, error) {
		for _, n := range nodes {
			node, err := e.client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if v := lastValidation(node); v.Result == health.ValidationRunning && v.Kind == health.ValidationIdle {
				preempted = n
				return e.client.CoreV1().Pods(e.ns).Delete(ctx, v.Pod, metav1.DeleteOptions{}) == nil, nil
			}
		}
		return false, fmt.Errorf("none running")
	})
	e.waitNode(preempted, "validation recorded preempted", 30*time.Second, func(n *corev1.Node) bool {
		return lastValidation(n).Result == health.ValidationPreempted
	})
	got, _ := e.client.CoreV1().Nodes().Get(context.Background(), preempted, metav1.GetOptions{})
	if c := condition(got, health.ValidationFailed); c != nil && c.Status == corev1.ConditionTrue {
		t.Errorf("a preempted validation marked %s failed: %+v", preempted, c)
	}
	if tainted(got) {
		t.Errorf("a preempted validation quarantined %s", preempted)
	}
	// Another node's validation runs to the end and passes.
	var v health.ValidationRun
	var c *corev1.NodeCondition
	e2e.WaitFor(t, "another node's validation passed", 30*time.Second, func(ctx context.Context) (bool, error) {
		for _, n := range nodes {
			node, err := e.client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if v, c = lastValidation(node), condition(node, health.ValidationFailed); n != preempted && v.Result == health.ValidationPassed {
				return true, nil
			}
		}
		return false, fmt.Errorf("none passed yet")
	})
	if v.FinishedAt.Sub(v.StartedAt) < 3*time.Second {
		t.Errorf("validation took %s, the simulated pod runs 3s", v.FinishedAt.Sub(v.StartedAt))
	}
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != health.ReasonValidationPassed || !strings.Contains(c.Message, "Passed") {
		t.Errorf("%s condition %+v, want False/Passed", health.ValidationFailed, c)
	}
}

// TestFailedIdleValidationQuarantines: a failing validation of both idle nodes of a
// two-node partition marks both ValidationFailed (saying what failed), and the circuit
// breaker lets exactly one be quarantined, as for any fault.
func TestFailedIdleValidationQuarantines(t *testing.T) {
	nodes := []string{"a100-0", "a100-1"}
	resetNodes(t, nodes...)
	e := startEnvWith(t, idleOnly("a100", time.Second, 2, "1", "1s"))
	for _, n := range nodes {
		e.waitNode(n, "ValidationFailed True", 30*time.Second, func(node *corev1.Node) bool {
			c := condition(node, health.ValidationFailed)
			return c != nil && c.Status == corev1.ConditionTrue && c.Reason == health.ActionHardwareRepair.Reason() &&
				strings.Contains(c.Message, "exited 1")
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	count := func() (out, in []string) { return e.splitByTaint(t, nodes) }
	for out, _ := count(); len(out) == 0 && time.Now().Before(deadline); out, _ = count() {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // a breaker that leaks would quarantine the second by now
	out, in := count()
	if len(out) != 1 || len(in) != 1 {
		t.Fatalf("quarantined %v, in service %v; want exactly one of two", out, in)
	}
	if !e.hasEvent(in[0], "QuarantineDeferred") {
		t.Errorf("no QuarantineDeferred event on %s", in[0])
	}
	node, _ := e.client.CoreV1().Nodes().Get(context.Background(), out[0], metav1.GetOptions{})
	if v := lastValidation(node); v.Result != health.ValidationFailedRun || !strings.Contains(v.Detail, "exited 1") {
		t.Errorf("last validation %+v, want Failed saying the exit code", v)
	}
	if st := remediation(node); st.Action != health.ActionHardwareRepair.String() || !strings.Contains(st.Reason, string(health.ValidationFailed)) {
		t.Errorf("remediation %+v, want a hardware repair for %s", st, health.ValidationFailed)
	}
}
