package controller

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// A step decided from a stale copy of the node (still Validating, while the node was
// returned meanwhile) writes nothing; one decided from the stored state is written.
func TestAdvanceWritesOnlyFromTheStoredState(t *testing.T) {
	rig := e2e.Rig(t)
	ctx := context.Background()
	name := cluster.NodeName("a100", 1)
	c := &controller{client: rig.Client()}
	setState := func(st health.RemediationState) {
		t.Helper()
		if err := c.updateNode(ctx, name, func(n *corev1.Node) { setAnnotation(n, health.RemediationAnnotation, st.Format()) }); err != nil {
			t.Fatal(err)
		}
	}
	marked := func() bool {
		n, err := rig.Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Annotations["test.sluice.dev/step"] != ""
	}
	t.Cleanup(func() {
		_ = c.updateNode(ctx, name, func(n *corev1.Node) {
			delete(n.Annotations, health.RemediationAnnotation)
			delete(n.Annotations, "test.sluice.dev/step")
		})
	})
	step := func(n *corev1.Node) { setAnnotation(n, "test.sluice.dev/step", "written") }

	setState(health.RemediationState{}) // returned: no phase
	if err := c.advance(ctx, name, health.PhaseValidating, "sluice-validate-old", step); !errors.Is(err, errMoved) || marked() {
		t.Fatalf("a step from a stale Validating copy: err %v, written %v; want errMoved and nothing written", err, marked())
	}
	setState(health.RemediationState{Phase: health.PhaseValidating, ValidationPod: "sluice-validate-new"})
	if err := c.advance(ctx, name, health.PhaseValidating, "sluice-validate-old", step); !errors.Is(err, errMoved) || marked() {
		t.Fatalf("a step about another validation pod: err %v, written %v; want errMoved and nothing written", err, marked())
	}
	if err := c.advance(ctx, name, health.PhaseValidating, "sluice-validate-new", step); err != nil || !marked() {
		t.Fatalf("a step from the stored state: err %v, written %v; want it written", err, marked())
	}
}
