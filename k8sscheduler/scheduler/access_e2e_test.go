package scheduler

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// With no webhook in front (as if it were off), a group whose namespace its queue does
// not admit is not charged to the queue: it stays pending with InvalidAccount, naming the
// queues the namespace may use, and binds once the namespace is given the team's label.
// It has a pool of its own: the pod it leaves bound would take a GPU another test counts on.
func TestQueueChargedOnlyByNamespacesItAdmits(t *testing.T) {
	e := setup(t)
	closed := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "team-only-q"},
		Spec: v1alpha1.QueueSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "only"}}}}
	e.create(closed)
	e.queue("open-q", "access", 0)
	e.run()
	pods := e.group("sneaky", "team-only-q", "access", 1, "", 1, 1, nil)
	c := e.condition("sneaky", v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong)
	if c.Reason != ReasonInvalidAccount || !strings.Contains(c.Message, `queue "team-only-q" does not admit namespace "`+e.ns+`"`) ||
		!strings.Contains(c.Message, "open-q") {
		t.Fatalf("condition %+v, want %s naming the queue, the namespace and open-q", c, ReasonInvalidAccount)
	}
	if node := e.pod(pods[0]).Spec.NodeName; node != "" {
		t.Fatalf("the pod was bound to %s", node)
	}
	patch := []byte(`{"metadata":{"labels":{"team":"only"}}}`)
	if _, err := e.rig.Client().CoreV1().Namespaces().Patch(context.Background(), e.ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitBound(pods, waitLong)
}
