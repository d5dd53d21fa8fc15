package scheduler

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

const waitLong = 60 * time.Second

// A gang of four full-node pods with only three free nodes stays entirely pending with a
// reason, and binds all together once the fourth node frees up.
func TestGangWaitsForAllMembers(t *testing.T) {
	e := start(t)
	e.queue("gang-q", "gang", 0)
	zero := int64(0)
	blocker := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "blocker", Namespace: e.ns},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/hostname": cluster.NodeName("gang", 3)},
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("8")},
				Limits:   corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("8")}}}}}}
	if _, err := e.rig.Client().CoreV1().Pods(e.ns).Create(context.Background(), blocker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitBound([]string{"blocker"}, waitLong) // by kube-scheduler: another scheduler's pod

	pods := e.group("gang", "gang-q", "gang", 4, "", 4, 8, nil)
	c := e.condition("gang", v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong)
	if c.Reason == "" || c.Message == "" {
		t.Errorf("pending condition has no reason: %+v", c)
	}
	for _, n := range pods {
		if node := e.pod(n).Spec.NodeName; node != "" {
			t.Fatalf("gang member %s bound to %s while the gang cannot fit", n, node)
		}
	}

	if err := e.rig.Client().CoreV1().Pods(e.ns).Delete(context.Background(), "blocker", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	nodes := e.waitBound(pods, waitLong)
	slices.Sort(nodes)
	if len(slices.Compact(nodes)) != 4 {
		t.Errorf("gang nodes %v, want four distinct nodes", nodes)
	}
	for _, n := range pods {
		a, err := v1alpha1.ParseGPUAssignment(e.pod(n).Annotations[v1alpha1.GPUAssignmentAnnotation])
		if err != nil || len(a.GPUs) != 8 || a.Portion != 1 {
			t.Errorf("pod %s assignment %+v, %v; want 8 whole GPUs", n, a, err)
		}
	}
	e.condition("gang", v1alpha1.PodGroupConditionScheduled, metav1.ConditionTrue, waitLong)
}

// Four pods asking for a quarter GPU each share one device of one node.
func TestFractionsShareOneGPU(t *testing.T) {
	e := start(t)
	e.queue("frac-q", "frac", 0)
	var pods []string
	for i := range 4 {
		pods = append(pods, e.group(fmt.Sprintf("quarter-%d", i), "frac-q", "frac", 1, "", 1, 0,
			map[string]string{v1alpha1.GPUFractionAnnotation: "0.25"})...)
	}
	nodes := e.waitBound(pods, waitLong)
	var devices []string
	for i, n := range pods {
		p := e.pod(n)
		devices = append(devices, p.Annotations[v1alpha1.VisibleDevicesAnnotation])
		if nodes[i] != nodes[0] {
			t.Errorf("pod %s on %s, want all on %s", n, nodes[i], nodes[0])
		}
		if got := p.Annotations[v1alpha1.GPUPortionAnnotation]; got != "0.25" {
			t.Errorf("pod %s portion %q, want 0.25", n, got)
		}
	}
	want := cluster.GPUUUID(nodes[0], 0)
	for i, d := range devices {
		if d != devices[0] || len(d) != len(want) {
			t.Errorf("pod %s sees %q, want one GPU UUID shared by all four (%v)", pods[i], d, devices)
		}
	}
}

// Queue A fills a partition with preemptible over-quota work; queue B then asks for its
// quota: A's extra pods are evicted, B's run, and A keeps its own quota.
func TestReclaimForUnderQuotaQueue(t *testing.T) {
	e := start(t)
	e.queue("rc-a", "rc", 2)
	e.queue("rc-b", "rc", 2)
	var aPods []string
	for i := range 4 {
		aPods = append(aPods, e.group(fmt.Sprintf("a-%d", i), "rc-a", "rc", 1, v1alpha1.Preemptible, 1, 1, nil)...)
	}
	e.waitBound(aPods, waitLong)
	var bPods []string
	for i := range 2 {
		bPods = append(bPods, e.group(fmt.Sprintf("b-%d", i), "rc-b", "rc", 1, v1alpha1.NonPreemptible, 1, 1, nil)...)
	}
	e.waitBound(bPods, waitLong)

	var left []string
	for _, n := range aPods {
		p, err := e.rig.Client().CoreV1().Pods(e.ns).Get(context.Background(), n, metav1.GetOptions{})
		if err == nil && p.DeletionTimestamp == nil {
			left = append(left, n)
		}
	}
	if len(left) != 2 {
		t.Errorf("queue A kept pods %v, want exactly its quota of 2", left)
	}
	e2e.WaitFor(t, "Evicted events on A's pods", waitLong, func(ctx context.Context) (bool, error) {
		evs, err := e.rig.Client().CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Evicted"})
		if err != nil {
			return false, err
		}
		return len(evs.Items) == 2, fmt.Errorf("%d Evicted events", len(evs.Items))
	})
	evicted := 0
	for i := range 4 {
		pg := &v1alpha1.PodGroup{}
		if err := e.crs.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: fmt.Sprintf("a-%d", i)}, pg); err != nil {
			t.Fatal(err)
		}
		for _, c := range pg.Status.Conditions {
			if c.Type == v1alpha1.PodGroupConditionEvicted && c.Reason == conditionReason(string(bridge.EvictReclaim)) {
				evicted++
			}
		}
	}
	if evicted != 2 {
		t.Errorf("%d of A's PodGroups carry an Evicted condition, want 2", evicted)
	}
}

// A binpack partition puts two pods on one node; a spread partition on two.
func TestBinpackAndSpreadDiffer(t *testing.T) {
	e := setup(t)
	e.partition("bp", v1alpha1.PlacementBinpack)
	e.partition("sp", v1alpha1.PlacementSpread)
	e.run()
	e.queue("place-q", "", 0)
	var bp, sp []string
	for i := range 2 {
		bp = append(bp, e.group(fmt.Sprintf("bp-%d", i), "place-q", "bp", 1, "", 1, 1, nil)...)
		sp = append(sp, e.group(fmt.Sprintf("sp-%d", i), "place-q", "sp", 1, "", 1, 1, nil)...)
	}
	bpNodes := e.waitBound(bp, waitLong)
	spNodes := e.waitBound(sp, waitLong)
	if bpNodes[0] != bpNodes[1] {
		t.Errorf("binpack placed on %v, want one node", bpNodes)
	}
	if spNodes[0] == spNodes[1] {
		t.Errorf("spread placed on %v, want two nodes", spNodes)
	}
}

// A cordoned node gets nothing, even in a spread partition that would use it.
func TestCordonedNodeGetsNothing(t *testing.T) {
	e := setup(t)
	e.partition("cord", v1alpha1.PlacementSpread)
	e.queue("cord-q", "", 0)
	cordoned := cluster.NodeName("cord", 0)
	setUnschedulable(t, e, cordoned, true)
	t.Cleanup(func() { setUnschedulable(t, e, cordoned, false) })
	e.run()
	var pods []string
	for i := range 3 {
		pods = append(pods, e.group(fmt.Sprintf("c-%d", i), "cord-q", "cord", 1, "", 1, 1, nil)...)
	}
	for i, n := range e.waitBound(pods, waitLong) {
		if n == cordoned {
			t.Errorf("pod %s bound to the cordoned node", pods[i])
		}
	}
}

func setUnschedulable(t *testing.T, e *env, node string, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
	if _, err := e.rig.Client().CoreV1().Nodes().Patch(context.Background(), node, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("cordon %s=%v: %v", node, on, err)
	}
}
