package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// draPool is the rig's pool whose GPUs come through DRA (the stand-in driver of
// test/cluster publishes them, with MIG partitions): 2 nodes of 4 GPUs.
func draPool() cluster.NodePool {
	return cluster.NodePool{Name: "dra", Count: 2, GPUsPerNode: 4, GPUModel: "H100-80GB", GPUMemoryMiB: 81920,
		CPU: "64", Memory: "512Gi", DRA: true, MIGMode: "mixed"}
}

// claimSpec asks for count devices of a class, optionally only on one node's devices.
func claimSpec(class string, count int64) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name: "dev", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}}}}
}

// draPods creates a PodGroup of n pods in partition dra, each naming the claim (a
// ResourceClaim's name) or a claim from the template, on node when it is set.
func (e *env) draPods(group, queue string, minMember int32, n int, claim, template, node string) []string {
	e.t.Helper()
	return e.draPodsIn("dra", nil, group, queue, minMember, n, claim, template, node)
}

// draPodsIn is draPods in partition part, with the PodGroup's annotations ann.
func (e *env) draPodsIn(part string, ann map[string]string, group, queue string, minMember int32, n int, claim, template, node string) []string {
	e.t.Helper()
	e.create(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: group, Namespace: e.ns, Annotations: ann},
		Spec: v1alpha1.PodGroupSpec{MinMember: minMember, Queue: queue, Partition: part}})
	var names []string
	for i := range n {
		pc := corev1.PodResourceClaim{Name: "gpus"}
		if claim != "" {
			pc.ResourceClaimName = &claim
		} else {
			pc.ResourceClaimTemplateName = &template
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", group, i), Namespace: e.ns,
			Annotations: map[string]string{v1alpha1.PodGroupAnnotation: group}},
			Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName, ResourceClaims: []corev1.PodResourceClaim{pc},
				Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, Claims: []corev1.ResourceClaim{{Name: "gpus"}}}}}}}
		if node != "" {
			pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		}
		if _, err := e.rig.Client().CoreV1().Pods(e.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("create pod: %v", err)
		}
		names = append(names, pod.Name)
	}
	return names
}

func (e *env) claim(name string, spec resourceapi.ResourceClaimSpec) {
	e.t.Helper()
	rc := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, Spec: spec}
	if _, err := e.rig.Client().ResourceV1().ResourceClaims(e.ns).Create(context.Background(), rc, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create ResourceClaim %s: %v", name, err)
	}
}

func (e *env) claimTemplate(name string, spec resourceapi.ResourceClaimSpec) {
	e.t.Helper()
	t := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: spec}}
	if _, err := e.rig.Client().ResourceV1().ResourceClaimTemplates(e.ns).Create(context.Background(), t, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create ResourceClaimTemplate %s: %v", name, err)
	}
}

// podClaim is the ResourceClaim a pod's "gpus" claim names, once it has one.
func (e *env) podClaim(ctx context.Context, pod string) (*resourceapi.ResourceClaim, error) {
	p, err := e.rig.Client().CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	keys, wait := claimKeys(p)
	if wait != "" || len(keys) == 0 {
		return nil, fmt.Errorf("pod %s: %s", pod, wait)
	}
	_, name, _ := strings.Cut(keys[0], "/")
	return e.rig.Client().ResourceV1().ResourceClaims(e.ns).Get(ctx, name, metav1.GetOptions{})
}

// allocatedOn checks that a claim is allocated on node, reserved for pod, and returns its
// devices.
func allocatedOn(rc *resourceapi.ResourceClaim, node string, pod *corev1.Pod) ([]string, error) {
	if rc.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s not allocated", rc.Name)
	}
	var devs []string
	for _, r := range rc.Status.Allocation.Devices.Results {
		if r.Pool != node {
			return nil, fmt.Errorf("claim %s has device %s of pool %s, want node %s's", rc.Name, r.Device, r.Pool, node)
		}
		devs = append(devs, r.Device)
	}
	if !slices.ContainsFunc(rc.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == pod.UID }) {
		return nil, fmt.Errorf("claim %s reserved for %+v, not pod %s", rc.Name, rc.Status.ReservedFor, pod.Name)
	}
	return devs, nil
}

// Sluice allocates Dynamic Resource Allocation claims on its own: a pod's claim for one
// GPU of a DeviceClass and a 4-pod gang's claims made from a template are allocated on
// the node each pod is bound to (written to the claim before the bind, the pod among its
// consumers), each pod's GPUs named in its assignment; deleting the pods gives the
// devices back. A claim no node can meet leaves its gang pending with why, a MIG
// partition and a whole-GPU claim never share a GPU, and a device-plugin GPU pod never
// lands on a node whose GPUs come through DRA.
func TestDRAClaimsAllocatedBySluice(t *testing.T) {
	e := setup(t)
	sched := e.runWith(nil)
	ctx := context.Background()
	kube := e.rig.Client()
	e.queue("dra-q", "dra", 0)
	t.Cleanup(func() { // on failure, what the scheduler and the API server held
		if !t.Failed() {
			return
		}
		sched.cache.mu.Lock()
		for _, n := range []string{"dra-0", "dra-1"} {
			if ne := sched.cache.nodes[n]; ne != nil {
				t.Logf("node %s: GPUs %+v", n, ne.built.GPUs)
			}
		}
		for k, p := range sched.cache.pods {
			if strings.HasPrefix(k, e.ns) {
				t.Logf("pod %s node=%s gpu=%d bad=%q claims=%v", k, p.node, p.request.GPUMilli, p.bad, p.draClaims)
			}
		}
		sched.cache.mu.Unlock()
		evs, _ := kube.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{})
		for _, ev := range evs.Items {
			t.Logf("event %s %s: %s", ev.InvolvedObject.Name, ev.Reason, ev.Message)
		}
		pgs := &v1alpha1.PodGroupList{}
		_ = e.crs.List(ctx, pgs)
		for _, pg := range pgs.Items {
			if pg.Namespace == e.ns {
				t.Logf("PodGroup %s: %+v", pg.Name, pg.Status.Conditions)
			}
		}
		cl, _ := kube.ResourceV1().ResourceClaims(e.ns).List(ctx, metav1.ListOptions{})
		for _, x := range cl.Items {
			t.Logf("ResourceClaim %s alloc=%v reserved=%v", x.Name, x.Status.Allocation != nil, x.Status.ReservedFor)
		}
	})

	// One pod, one claim for one GPU.
	e.claim("one-gpu", claimSpec(cluster.DeviceClassGPU, 1))
	single := e.draPods("single", "dra-q", 1, 1, "one-gpu", "", "")
	node := e.waitBound(single, waitLong)[0]
	if !strings.HasPrefix(node, "dra-") {
		t.Fatalf("pod bound to %s, want a node of the DRA pool", node)
	}
	pod := e.pod(single[0])
	rc, err := e.podClaim(ctx, single[0])
	if err != nil {
		t.Fatal(err)
	}
	devs, err := allocatedOn(rc, node, pod)
	if err != nil || len(devs) != 1 || !strings.HasPrefix(devs[0], "gpu-") || strings.Contains(devs[0], "mig") {
		t.Fatalf("claim one-gpu: devices %v (%v), want one whole GPU of %s", devs, err, node)
	}
	a, err := v1alpha1.ParseGPUAssignment(pod.Annotations[v1alpha1.GPUAssignmentAnnotation])
	if err != nil || len(a.GPUs) != 1 || fmt.Sprintf("gpu-%d", a.GPUs[0].Index) != devs[0] || a.GPUs[0].UUID != cluster.GPUUUID(node, int(a.GPUs[0].Index)) {
		t.Errorf("GPU assignment %+v (%v), want the claim's device %s with its UUID", a, err, devs[0])
	}
	if _, ok := pod.Annotations[v1alpha1.VisibleDevicesAnnotation]; ok {
		t.Errorf("pod has %s: the DRA driver, not Sluice, makes its devices visible", v1alpha1.VisibleDevicesAnnotation)
	}

	// A 4-pod gang, a claim per pod from a template: 7 GPUs are free in the pool.
	e.claimTemplate("gpu-each", claimSpec(cluster.DeviceClassGPU, 1))
	gang := e.draPods("gang4", "dra-q", 4, 4, "", "gpu-each", "")
	nodes := e.waitBound(gang, waitLong)
	taken := map[string]bool{node + "/" + devs[0]: true}
	for i, name := range gang {
		rc, err := e.podClaim(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		d, err := allocatedOn(rc, nodes[i], e.pod(name))
		if err != nil || len(d) != 1 {
			t.Fatalf("gang pod %s: %v (devices %v)", name, err, d)
		}
		if taken[nodes[i]+"/"+d[0]] {
			t.Errorf("device %s of %s given twice", d[0], nodes[i])
		}
		taken[nodes[i]+"/"+d[0]] = true
	}

	// The queue is charged the 5 claimed GPUs, as for nvidia.com/gpu.
	e2e.WaitFor(t, "queue dra-q charged 5 GPUs", waitLong, func(ctx context.Context) (bool, error) {
		q := &v1alpha1.Queue{}
		if err := e.crs.Get(ctx, client.ObjectKey{Name: "dra-q"}, q); err != nil {
			return false, err
		}
		if g := q.Status.Allocated.GPU; g == nil || g.Value() != 5 {
			return false, fmt.Errorf("queue status allocated %v GPUs", g)
		}
		return true, nil
	})

	// Five GPUs in one claim: no node has them.
	e.claim("five", claimSpec(cluster.DeviceClassGPU, 5))
	e.draPods("too-big", "dra-q", 1, 1, "five", "", "")
	cond := e.condition("too-big", v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong)
	if !strings.Contains(cond.Message, "ResourceClaim five (5 of gpu.nvidia.com)") {
		t.Errorf("pending reason %q does not name the claim and what it asks", cond.Message)
	}

	// A device-plugin GPU pod asking the DRA partition finds no node.
	plugin := e.group("plugin-gpu", "dra-q", "dra", 1, "", 1, 1, nil)
	e.condition("plugin-gpu", v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong)
	if n := e.pod(plugin[0]).Spec.NodeName; n != "" {
		t.Errorf("a pod asking nvidia.com/gpu was bound to %s, whose GPUs come through DRA", n)
	}
	// Nor a share of a GPU: its reservation pod would ask the device plugin.
	half := e.group("half-gpu", "dra-q", "dra", 1, "", 1, 0, map[string]string{v1alpha1.GPUFractionAnnotation: "0.5"})
	e.condition("half-gpu", v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong)
	if n := e.pod(half[0]).Spec.NodeName; n != "" {
		t.Errorf("a half-GPU pod was bound to %s, whose GPUs come through DRA", n)
	}

	// Deleting the pods gives their devices back (the resource claim controller takes
	// them off the claims and frees them); the gang's claims go with their pods.
	for _, name := range append(single, gang...) {
		if err := kube.CoreV1().Pods(e.ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	e2e.WaitFor(t, "claim one-gpu freed", waitLong, func(ctx context.Context) (bool, error) {
		rc, err := kube.ResourceV1().ResourceClaims(e.ns).Get(ctx, "one-gpu", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if rc.Status.Allocation != nil || len(rc.Status.ReservedFor) > 0 {
			return false, fmt.Errorf("still allocated, reserved for %+v", rc.Status.ReservedFor)
		}
		return true, nil
	})

	// MIG and whole GPUs on one node: a MIG partition takes its GPU from the whole-GPU
	// claims, so with a partition allocated on dra-0, three whole GPUs fit there, not one
	// more.
	e.claim("mig", claimSpec(cluster.DeviceClassMIG, 1))
	mig := e.draPods("mig", "dra-q", 1, 1, "mig", "", "dra-0")
	e.waitBound(mig, waitLong)
	e.claim("three", claimSpec(cluster.DeviceClassGPU, 3))
	three := e.draPods("three", "dra-q", 1, 1, "three", "", "dra-0")
	e.waitBound(three, waitLong)
	e.claim("one-more", claimSpec(cluster.DeviceClassGPU, 1))
	e.draPods("one-more", "dra-q", 1, 1, "one-more", "", "dra-0")
	if c := e.condition("one-more", v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong); !strings.Contains(c.Message, "needs 1 GPU") {
		t.Errorf("a fifth GPU's claim on dra-0 waits with %q, want the GPUs it needs", c.Message)
	}
	migClaim, err := e.podClaim(ctx, mig[0])
	if err != nil {
		t.Fatal(err)
	}
	threeClaim, err := e.podClaim(ctx, three[0])
	if err != nil {
		t.Fatal(err)
	}
	parent := strings.Split(migClaim.Status.Allocation.Devices.Results[0].Device, "-mig-")[0]
	for _, r := range threeClaim.Status.Allocation.Devices.Results {
		if r.Device == parent {
			t.Errorf("whole GPU %s given while its MIG partition %s is allocated", r.Device, migClaim.Status.Allocation.Devices.Results[0].Device)
		}
	}
}
