package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestIdleValidationYieldsToJob: both nodes of a partition run a validation pod on all
// their GPUs, one an idle-node validation, the other a repaired node's (no idle label). A
// job needing a whole node takes the idle one at once: its validation pod is deleted (an
// Event says for which job), the other validation is left alone.
func TestIdleValidationYieldsToJob(t *testing.T) {
	e := setup(t)
	e.partition("idle", v1alpha1.PlacementBinpack)
	e.queue("idle-q", "", 0)
	idleNode, repairNode := cluster.NodeName("idle", 0), cluster.NodeName("idle", 1)
	validation := func(name, node string, idle bool) {
		labels := map[string]string{v1alpha1.ValidationLabel: node}
		if idle {
			labels[v1alpha1.IdleValidationLabel] = "idle"
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: labels},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "validate", Image: "dcgm",
				Resources: corev1.ResourceRequirements{Limits: gpuLimit(4), Requests: gpuLimit(4)}}}}}
		if _, err := e.rig.Client().CoreV1().Pods(e.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	validation("idle-check", idleNode, true)
	validation("repair-check", repairNode, false)
	e.run()

	submitted := time.Now()
	job := e.group("needs-node", "idle-q", "idle", 1, "", 1, 4, nil)
	if nodes := e.waitBound(job, waitLong); nodes[0] != idleNode {
		t.Fatalf("job bound to %s, want the idle-validated %s", nodes[0], idleNode)
	}
	t.Logf("job submitted -> validation removed and job bound: %s", time.Since(submitted).Round(time.Millisecond))
	if _, err := e.rig.Client().CoreV1().Pods(e.ns).Get(context.Background(), "idle-check", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("idle validation pod still there (%v) after the job took its node", err)
	}
	if p := e.pod("repair-check"); p.DeletionTimestamp != nil {
		t.Error("a repaired node's validation pod was removed")
	}
	e2e.WaitFor(t, "ValidationPreempted event", waitLong, func(ctx context.Context) (bool, error) {
		list, err := e.rig.Client().CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=idle-check,reason=ValidationPreempted"})
		if err != nil || len(list.Items) == 0 {
			return false, fmt.Errorf("none yet (%v)", err)
		}
		return true, nil
	})
}
