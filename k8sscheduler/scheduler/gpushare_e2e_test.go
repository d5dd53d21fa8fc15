package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/e2e"
)

// Four quarter-GPU pods share one GPU of an 8-GPU node; its reservation pod holds that GPU
// in kube-scheduler's books (allocatable minus requested nvidia.com/gpu), so a
// default-scheduler pod asking for all 8 GPUs of the node stays pending until the
// fractions end and the reservation goes.
func TestSharedGPUHeldFromKubeScheduler(t *testing.T) {
	e := start(t)
	e.queue("share-q", "share", 0)
	var pods []string
	for i := range 4 {
		pods = append(pods, e.group(fmt.Sprintf("quarter-%d", i), "share-q", "share", 1, "", 1, 0,
			map[string]string{v1alpha1.GPUFractionAnnotation: "0.25"})...)
	}
	nodes := e.waitBound(pods, waitLong)
	res := e.reservations(nodes[0], 1)
	device := res[0].Annotations[v1alpha1.ReservedGPUAnnotation]
	for i, n := range pods {
		if nodes[i] != nodes[0] {
			t.Errorf("pod %s on %s, want all on %s", n, nodes[i], nodes[0])
		}
		if got := e.pod(n).Annotations[v1alpha1.VisibleDevicesAnnotation]; got != device {
			t.Errorf("pod %s sees %q, want its reservation's device %q", n, got, device)
		}
	}

	kube := e.rig.Client()
	eight := corev1.ResourceList{v1alpha1.GPUResource: *resource.NewQuantity(8, resource.DecimalSI)}
	whole := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "all-eight", Namespace: e.ns},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{v1alpha1.PartitionLabel: "share"}, Containers: []corev1.Container{{
			Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: eight, Limits: eight}}}},
	}
	if _, err := kube.CoreV1().Pods(e.ns).Create(context.Background(), whole, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, "kube-scheduler finds no room for 8 GPUs", waitLong, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(e.ns).Get(ctx, whole.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("bound to %s while a GPU there is shared: the device plugin would hand it out twice", p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "nvidia.com/gpu") {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", p.Status.Conditions)
	})
	if p := e.pod(whole.Name); p.Spec.NodeName != "" {
		t.Fatalf("the 8-GPU pod was bound to %s next to the fractions", p.Spec.NodeName)
	}

	for _, n := range pods {
		if err := kube.CoreV1().Pods(e.ns).Delete(context.Background(), n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitBound([]string{whole.Name}, waitLong)
	e.reservations(nodes[0], 0)
}

// reservations waits until node has want reservation pods, each with a reported device
// (the rig hands devices out as a device plugin would), and returns them.
func (e *env) reservations(node string, want int) []corev1.Pod {
	e.t.Helper()
	var out []corev1.Pod
	e2e.WaitFor(e.t, fmt.Sprintf("%d GPU reservations on %s", want, node), waitLong, func(ctx context.Context) (bool, error) {
		list, err := e.rig.Client().CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{
			LabelSelector: v1alpha1.GPUReservationLabel + "=true", FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return false, err
		}
		out = list.Items
		if len(out) != want {
			return false, fmt.Errorf("%d reservations", len(out))
		}
		for _, p := range out {
			if p.Annotations[v1alpha1.ReservedGPUAnnotation] == "" {
				return false, fmt.Errorf("reservation %s has no device yet", p.Name)
			}
		}
		return true, nil
	})
	return out
}

// Queue A runs two preemptible half-GPU pods on one shared GPU (held by a reservation pod)
// and a non-preemptible whole GPU; queue B asks for its quota of one GPU. The fractions are
// reclaimed, their reservation goes after them, and B's pod gets the freed device. Before
// the core knew a reservation goes with its sharers, it counted the reservation as a
// tenant of the device that no eviction frees, and B waited forever.
func TestReclaimFreesASharedGPU(t *testing.T) {
	e := start(t)
	e.queue("rcf-a", "rcf", 1)
	e.queue("rcf-b", "rcf", 1)
	half := map[string]string{v1alpha1.GPUFractionAnnotation: "0.5"}
	var fractions []string
	for i := range 2 {
		fractions = append(fractions, e.group(fmt.Sprintf("half-%d", i), "rcf-a", "rcf", 1, v1alpha1.Preemptible, 1, 0, half)...)
	}
	nodes := e.waitBound(fractions, waitLong)
	e.reservations(nodes[0], 1)
	kept := e.group("kept", "rcf-a", "rcf", 1, v1alpha1.NonPreemptible, 1, 1, nil)
	e.waitBound(kept, waitLong)

	claim := e.group("claim", "rcf-b", "rcf", 1, v1alpha1.NonPreemptible, 1, 1, nil)
	e.waitBound(claim, waitLong)
	e.reservations(nodes[0], 0)
	for _, n := range fractions {
		p, err := e.rig.Client().CoreV1().Pods(e.ns).Get(context.Background(), n, metav1.GetOptions{})
		if err == nil && p.DeletionTimestamp == nil {
			t.Errorf("fraction %s still runs beside the reclaiming pod", n)
		}
	}
	if p := e.pod(kept[0]); p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
		t.Errorf("the non-preemptible pod %s was touched", kept[0])
	}
}
