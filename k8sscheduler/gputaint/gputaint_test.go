package gputaint

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func node(name string, res corev1.ResourceName, n int64, taints ...corev1.Taint) *corev1.Node {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
	if res != "" {
		rl[res] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl}}
}

func TestNeedsTaint(t *testing.T) {
	quarantine := corev1.Taint{Key: v1alpha1.QuarantineTaint, Effect: corev1.TaintEffectNoSchedule}
	noExecute := corev1.Taint{Key: v1alpha1.GPUTaint, Effect: corev1.TaintEffectNoExecute}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"GPU node", node("a", v1alpha1.GPUResource, 8), true},
		{"GPU node with another taint", node("a", v1alpha1.GPUResource, 8, quarantine), true},
		{"GPU node with the key at another effect", node("a", v1alpha1.GPUResource, 8, noExecute), true},
		{"MIG node", node("a", "nvidia.com/mig-1g.10gb", 7), true},
		{"tainted already", node("a", v1alpha1.GPUResource, 8, Taint()), false},
		{"no GPUs", node("a", "", 0), false},
		{"GPUs gone to zero", node("a", v1alpha1.GPUResource, 0), false},
	} {
		if got := NeedsTaint(tc.node); got != tc.want {
			t.Errorf("%s: NeedsTaint = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// taint adds the taint once, keeps the node's other taints, and passes a vanished node by.
func TestTaint(t *testing.T) {
	quarantine := corev1.Taint{Key: v1alpha1.QuarantineTaint, Effect: corev1.TaintEffectNoSchedule, Value: "GPUXidError"}
	client := fake.NewClientset(node("h100-0", v1alpha1.GPUResource, 8, quarantine))
	ctx := context.Background()
	for range 2 {
		if err := taint(ctx, client, "h100-0"); err != nil {
			t.Fatal(err)
		}
	}
	n, err := client.CoreV1().Nodes().Get(ctx, "h100-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := Taint()
	if len(n.Spec.Taints) != 2 || n.Spec.Taints[0] != quarantine || !n.Spec.Taints[1].MatchTaint(&want) {
		t.Errorf("taints %+v, want the quarantine kept and %s:%s added once", n.Spec.Taints, want.Key, want.Effect)
	}
	if err := taint(ctx, client, "gone"); err != nil {
		t.Errorf("a node that is gone: %v", err)
	}
}
