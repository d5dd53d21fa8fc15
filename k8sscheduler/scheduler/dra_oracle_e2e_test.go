package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
)

// draOraclePools are two identical sets of DRA nodes, one H100 with MIG partitions and
// one A100 each: "ors-*" in partition dra-oracle-s for Sluice, "ork-*" (labelled
// dra-oracle-k) for kube-scheduler, so both decide the same claims on the same devices at
// once.
func draOraclePools() []cluster.NodePool {
	pool := func(name, part, model string, gpus, memMiB int, mig string) cluster.NodePool {
		return cluster.NodePool{Name: name, Count: 1, GPUsPerNode: gpus, GPUModel: model, GPUMemoryMiB: memMiB, CPU: "64", Memory: "512Gi",
			DRA: true, MIGMode: mig, Labels: map[string]string{v1alpha1.PartitionLabel: part}}
	}
	return []cluster.NodePool{
		pool("ors-h", "dra-oracle-s", "H100-80GB", 4, 81920, "mixed"), pool("ors-a", "dra-oracle-s", "A100-40GB", 2, 40960, ""),
		pool("ork-h", "dra-oracle-k", "H100-80GB", 4, 81920, "mixed"), pool("ork-a", "dra-oracle-k", "A100-40GB", 2, 40960, ""),
	}
}

// oracleSelectors are the CEL selectors a generated request may carry: on the product
// name, the memory capacity, the architecture and the driver version, some matching one
// model's devices, some all, some none.
var oracleSelectors = []string{
	`device.attributes["gpu.nvidia.com"].productName == "A100-40GB"`,
	`device.attributes["gpu.nvidia.com"].productName == "H100-80GB"`,
	`device.attributes["gpu.nvidia.com"].productName == "B200"`,
	`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("50Gi")) >= 0`,
	`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("10Gi")) >= 0`,
	`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("200Gi")) >= 0`,
	`device.attributes["gpu.nvidia.com"].architecture == "Ampere"`,
	`device.attributes["gpu.nvidia.com"].architecture == "Hopper"`,
	`device.attributes["gpu.nvidia.com"].architecture == "Blackwell"`,
	`device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("500.0.0"))`,
	`device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("600.0.0"))`,
	`device.attributes["gpu.nvidia.com"].driverVersion.isLessThan(semver("560.0.0"))`,
}

// oracleMix is one pod's claims.
type oracleMix []resourceapi.ResourceClaimSpec

func oracleSel(expr string) []resourceapi.DeviceSelector {
	if expr == "" {
		return nil
	}
	return []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}
}

func exact(name, class string, count int64, sel string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class,
		AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count, Selectors: oracleSel(sel)}}
}

func allOf(name, class, sel string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class,
		AllocationMode: resourceapi.DeviceAllocationModeAll, Selectors: oracleSel(sel)}}
}

// firstOf is a prioritized list of exact requests (their names are the alternatives').
func firstOf(name string, alts ...resourceapi.DeviceRequest) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name}
	for _, a := range alts {
		r.FirstAvailable = append(r.FirstAvailable, resourceapi.DeviceSubRequest{Name: a.Name, DeviceClassName: a.Exactly.DeviceClassName,
			Selectors: a.Exactly.Selectors, AllocationMode: a.Exactly.AllocationMode, Count: a.Exactly.Count})
	}
	return r
}

func oracleClaim(reqs ...resourceapi.DeviceRequest) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}}
}

// oracleMixes are the mixes the oracle test decides: a few chosen for their edges (no
// node has the count, MIG asked of the A100 that has none, selectors matching nothing,
// whole GPUs and MIG partitions beyond the H100's 4 GPUs, alternatives, all MIG
// partitions), then n generated from a fixed seed.
func oracleMixes(n int) []oracleMix {
	gpu, mig := cluster.DeviceClassGPU, cluster.DeviceClassMIG
	a100, h100 := oracleSelectors[0], oracleSelectors[1]
	mixes := []oracleMix{
		{oracleClaim(exact("r0", gpu, 5, ""))},
		{oracleClaim(exact("r0", mig, 1, a100))},
		{oracleClaim(exact("r0", gpu, 4, "")), oracleClaim(exact("r0", mig, 1, ""))},
		{oracleClaim(exact("r0", gpu, 3, "")), oracleClaim(exact("r0", mig, 2, ""))},
		{oracleClaim(exact("r0", gpu, 2, a100))},
		{oracleClaim(exact("r0", gpu, 3, oracleSelectors[3]))},
		{oracleClaim(exact("r0", gpu, 1, oracleSelectors[8]))},
		{oracleClaim(firstOf("r0", exact("big", gpu, 5, ""), exact("one", gpu, 1, "")))},
		{oracleClaim(firstOf("r0", exact("mig", mig, 1, a100), exact("two", gpu, 2, a100)))},
		{oracleClaim(allOf("r0", mig, h100))},
		{oracleClaim(allOf("r0", mig, "")), oracleClaim(exact("r0", gpu, 1, ""))},
	}
	r := rand.New(rand.NewPCG(38, 2026))
	pick := func(weights ...int) int { // an index drawn with these weights
		total := 0
		for _, w := range weights {
			total += w
		}
		x := r.IntN(total)
		for i, w := range weights {
			if x < w {
				return i
			}
			x -= w
		}
		return len(weights) - 1
	}
	device := func(name string) resourceapi.DeviceRequest {
		class := gpu
		if pick(6, 4) == 1 {
			class = mig
		}
		sel := ""
		if r.IntN(2) == 0 {
			sel = oracleSelectors[r.IntN(len(oracleSelectors))]
		}
		return exact(name, class, int64(1+pick(5, 3, 2, 1, 1)), sel)
	}
	for range n {
		var mix oracleMix
		for range 1 + pick(6, 3, 1) {
			var reqs []resourceapi.DeviceRequest
			for j := range 1 + pick(7, 3) {
				name := fmt.Sprintf("r%d", j)
				switch pick(7, 2, 1) {
				case 0:
					reqs = append(reqs, device(name))
				case 1:
					var alts []resourceapi.DeviceRequest
					for k := range 2 + r.IntN(2) {
						alts = append(alts, device(fmt.Sprintf("alt%d", k)))
					}
					reqs = append(reqs, firstOf(name, alts...))
				case 2:
					sel := ""
					if r.IntN(2) == 0 {
						sel = oracleSelectors[r.IntN(len(oracleSelectors))]
					}
					reqs = append(reqs, allOf(name, mig, sel))
				}
			}
			mix = append(mix, oracleClaim(reqs...))
		}
		mixes = append(mixes, mix)
	}
	return mixes
}

// describeRequest says what a request asks, compactly, for the log.
func describeRequest(r resourceapi.DeviceRequest) string {
	one := func(class string, mode resourceapi.DeviceAllocationMode, count int64, sels []resourceapi.DeviceSelector) string {
		s := fmt.Sprintf("%d×%s", count, strings.TrimSuffix(class, ".nvidia.com"))
		if mode == resourceapi.DeviceAllocationModeAll {
			s = "all " + strings.TrimSuffix(class, ".nvidia.com")
		}
		for _, sel := range sels {
			s += " [" + strings.ReplaceAll(sel.CEL.Expression, `device.attributes["gpu.nvidia.com"].`, "") + "]"
		}
		return s
	}
	if r.Exactly != nil {
		return one(r.Exactly.DeviceClassName, r.Exactly.AllocationMode, r.Exactly.Count, r.Exactly.Selectors)
	}
	var alts []string
	for _, s := range r.FirstAvailable {
		alts = append(alts, one(s.DeviceClassName, s.AllocationMode, s.Count, s.Selectors))
	}
	return "first of (" + strings.Join(alts, " | ") + ")"
}

func (m oracleMix) String() string {
	var claims []string
	for _, c := range m {
		var reqs []string
		for _, r := range c.Devices.Requests {
			reqs = append(reqs, describeRequest(r))
		}
		claims = append(claims, "{"+strings.Join(reqs, "; ")+"}")
	}
	return strings.Join(claims, " ")
}

// asksAllGPUs reports whether a mix asks for all devices of the GPU class, which Sluice
// refuses (an exact count is what its core charges).
func (m oracleMix) asksAllGPUs() bool {
	for _, c := range m {
		for _, r := range c.Devices.Requests {
			if r.Exactly != nil && r.Exactly.DeviceClassName == cluster.DeviceClassGPU && r.Exactly.AllocationMode == resourceapi.DeviceAllocationModeAll {
				return true
			}
			for _, s := range r.FirstAvailable {
				if s.DeviceClassName == cluster.DeviceClassGPU && s.AllocationMode == resourceapi.DeviceAllocationModeAll {
					return true
				}
			}
		}
	}
	return false
}

// oracleOutcome is what a scheduler made of one mix's pod: the node it bound it to, or
// "" and why it cannot be placed.
type oracleOutcome struct {
	node, why string
}

func (o oracleOutcome) String() string {
	if o.node != "" {
		return "bound to " + o.node
	}
	return "unschedulable (" + o.why + ")"
}

// model is the model letter of an oracle node (ors-h-0, ork-a-0: h, a).
func model(node string) string {
	parts := strings.Split(node, "-")
	if len(parts) < 3 {
		return ""
	}
	return parts[1]
}

// oraclePod creates a pod naming the claims: Sluice's in a PodGroup of one in the queue
// and partition dra-oracle-s, kube-scheduler's on the dra-oracle-k nodes.
func (e *env) oraclePod(ctx context.Context, name, queue string, claims []string, sluice bool) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	for i, c := range claims {
		pc := corev1.PodResourceClaim{Name: fmt.Sprintf("c%d", i), ResourceClaimName: &c}
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, pc)
		pod.Spec.Containers[0].Resources.Claims = append(pod.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: pc.Name})
	}
	if sluice {
		pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
			Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: queue, Partition: "dra-oracle-s"}}
		if err := e.crs.Create(ctx, pg); err != nil {
			return fmt.Errorf("create PodGroup %s: %w", name, err)
		}
		pod.Annotations = map[string]string{v1alpha1.PodGroupAnnotation: name}
		pod.Spec.SchedulerName = v1alpha1.DefaultSchedulerName
	} else {
		pod.Spec.SchedulerName = corev1.DefaultSchedulerName
		pod.Spec.NodeSelector = map[string]string{v1alpha1.PartitionLabel: "dra-oracle-k"}
	}
	_, err := e.rig.Client().CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

// oracleWait polls (every 50 ms: an outcome is usually there in well under a second)
// until decided returns an outcome.
func oracleWait(ctx context.Context, what string, decided func(ctx context.Context) (*oracleOutcome, error)) (oracleOutcome, error) {
	var last error
	for {
		o, err := decided(ctx)
		if o != nil {
			return *o, nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return oracleOutcome{}, fmt.Errorf("%s: no outcome (last: %v)", what, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kubeOutcome waits until kube-scheduler has bound the pod or found it unschedulable (a
// claim it has not seen yet is no outcome).
func (e *env) kubeOutcome(ctx context.Context, pod string) (oracleOutcome, error) {
	return oracleWait(ctx, "kube-scheduler's pod "+pod, func(ctx context.Context) (*oracleOutcome, error) {
		p, err := e.rig.Client().CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if p.Spec.NodeName != "" {
			return &oracleOutcome{node: p.Spec.NodeName}, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
				!strings.Contains(c.Message, "not found") {
				return &oracleOutcome{why: c.Message}, nil
			}
		}
		return nil, fmt.Errorf("pod conditions %+v", p.Status.Conditions)
	})
}

// sluiceOutcome waits until Sluice has bound the pod or said its PodGroup cannot be
// scheduled (waiting for a claim it has not seen yet is no outcome).
func (e *env) sluiceOutcome(ctx context.Context, pod string) (oracleOutcome, error) {
	return oracleWait(ctx, "Sluice's pod "+pod, func(ctx context.Context) (*oracleOutcome, error) {
		p, err := e.rig.Client().CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if p.Spec.NodeName != "" {
			return &oracleOutcome{node: p.Spec.NodeName}, nil
		}
		pg := &v1alpha1.PodGroup{}
		if err := e.crs.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: pod}, pg); err != nil {
			return nil, err
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionScheduled)
		if c != nil && c.Status == metav1.ConditionFalse && !strings.Contains(c.Message, "does not exist") {
			return &oracleOutcome{why: c.Message}, nil
		}
		return nil, fmt.Errorf("PodGroup conditions %+v", pg.Status.Conditions)
	})
}

// oracleDecide creates the mix's claims and pod for one scheduler and waits for its
// outcome; a bound pod's claims must be allocated on its node and reserved for it.
func (e *env) oracleDecide(ctx context.Context, name, queue string, mix oracleMix, sluice bool) (oracleOutcome, error) {
	var claims []string
	for i, spec := range mix {
		c := fmt.Sprintf("%s-c%d", name, i)
		rc := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: e.ns}, Spec: spec}
		if _, err := e.rig.Client().ResourceV1().ResourceClaims(e.ns).Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			return oracleOutcome{}, fmt.Errorf("create ResourceClaim %s: %w", c, err)
		}
		claims = append(claims, c)
	}
	if err := e.oraclePod(ctx, name, queue, claims, sluice); err != nil {
		return oracleOutcome{}, err
	}
	var o oracleOutcome
	var err error
	if sluice {
		o, err = e.sluiceOutcome(ctx, name)
	} else {
		o, err = e.kubeOutcome(ctx, name)
	}
	if err != nil || o.node == "" {
		return o, err
	}
	pod, err := e.rig.Client().CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return o, err
	}
	for _, c := range claims {
		rc, err := e.rig.Client().ResourceV1().ResourceClaims(e.ns).Get(ctx, c, metav1.GetOptions{})
		if err != nil {
			return o, err
		}
		if _, err := allocatedOn(rc, o.node, pod); err != nil {
			return o, fmt.Errorf("pod %s bound to %s: %w", name, o.node, err)
		}
	}
	return o, nil
}

// oracleClear deletes every pod, PodGroup and claim of the namespace and waits until the
// claims are gone: their devices are free once the resource claim controller has taken
// the deleted pods off them and dropped their allocations.
func (e *env) oracleClear(ctx context.Context) error {
	kube := e.rig.Client()
	grace := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	if err := kube.CoreV1().Pods(e.ns).DeleteCollection(ctx, grace, metav1.ListOptions{}); err != nil {
		return err
	}
	if err := e.crs.DeleteAllOf(ctx, &v1alpha1.PodGroup{}, client.InNamespace(e.ns)); err != nil {
		return err
	}
	if err := kube.ResourceV1().ResourceClaims(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	_, err := oracleWait(ctx, "claims and pods gone", func(ctx context.Context) (*oracleOutcome, error) {
		cl, err := kube.ResourceV1().ResourceClaims(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		pods, err := kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		if len(cl.Items) > 0 || len(pods.Items) > 0 {
			return nil, fmt.Errorf("%d claims, %d pods left", len(cl.Items), len(pods.Items))
		}
		return &oracleOutcome{}, nil
	})
	return err
}

// oracleFeasible says on which models' node (of Sluice's two, all devices free) the
// structured allocator meets the mix: to tell when only one model could take it.
func oracleFeasible(ctx context.Context, kube kubernetes.Interface, ns string, mix oracleMix) (map[string]bool, error) {
	sl, err := kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	classes, err := kube.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	lister := classLister{}
	for i := range classes.Items {
		lister[classes.Items[i].Name] = &classes.Items[i]
	}
	var pool []*resourceapi.ResourceSlice
	for i := range sl.Items {
		if n := sl.Items[i].Spec.NodeName; n != nil && strings.HasPrefix(*n, "ors-") {
			pool = append(pool, &sl.Items[i])
		}
	}
	var claims []*resourceapi.ResourceClaim
	for i, spec := range mix {
		claims = append(claims, &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("oracle-c%d", i), Namespace: ns,
			UID: types.UID(fmt.Sprintf("oracle-c%d", i))}, Spec: spec})
	}
	out := map[string]bool{}
	for _, name := range []string{"ors-h-0", "ors-a-0"} {
		node, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		alloc, err := structured.NewAllocator(ctx, draFeatures, structured.AllocatedState{}, lister, pool, cel.NewCache(10, cel.Features{EnableConsumableCapacity: true}))
		if err != nil {
			return nil, err
		}
		res, err := alloc.Allocate(ctx, node, claims)
		if err == nil && res != nil {
			out[model(name)] = true
		}
	}
	return out, nil
}

// Sluice's DRA allocation agrees with kube-scheduler's on whether a pod's claims can be
// met: generated mixes of 1 to 3 claims (exact counts of whole GPUs and MIG partitions,
// CEL selectors on the product name, memory, architecture and driver version,
// prioritized alternatives, all MIG partitions), each decided by both at once on
// identical empty nodes (an H100 with MIG and an A100), must be bound by both or by
// neither, each on a model whose node the structured allocator alone finds could take it
// (so on the only one when only one could). A mix asking for all devices of the GPU class
// Sluice refuses, saying why.
func TestDRAFeasibilityAgreesWithKubeScheduler(t *testing.T) {
	began := time.Now()
	e := setup(t)
	e.partition("dra-oracle-s", v1alpha1.PlacementBinpack)
	e.queue("dra-oracle-q", "dra-oracle-s", 0)
	e.runWith(nil)
	ctx := context.Background()
	kube := e.rig.Client()

	mixes := oracleMixes(52)
	mixes = append(mixes, oracleMix{oracleClaim(allOf("r0", cluster.DeviceClassGPU, ""))})
	var feasible, infeasible, refused, differ int
	for i, mix := range mixes {
		want, err := oracleFeasible(ctx, kube, e.ns, mix)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("m%02d", i)
		var s, k oracleOutcome
		var sErr, kErr error
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		var wg sync.WaitGroup
		wg.Go(func() { s, sErr = e.oracleDecide(wctx, name+"-s", "dra-oracle-q", mix, true) })
		wg.Go(func() { k, kErr = e.oracleDecide(wctx, name+"-k", "", mix, false) })
		wg.Wait()
		cancel()
		specs, _ := json.Marshal(mix)
		switch {
		case sErr != nil || kErr != nil:
			t.Errorf("mix %s %v: Sluice %v (%v), kube-scheduler %v (%v)\nclaims: %s", name, mix, s, sErr, k, kErr, specs)
		case mix.asksAllGPUs():
			refused++
			if s.node != "" || !strings.Contains(s.why, "asks for all devices of GPU class") {
				t.Errorf("mix %s %v asks all GPUs: Sluice %v, want it refused with why; kube-scheduler %v", name, mix, s, k)
			}
			t.Logf("mix %s %v: Sluice refuses (%s); kube-scheduler %v", name, mix, s.why, k)
		case (s.node != "") != (k.node != ""):
			differ++
			t.Errorf("mix %s %v: Sluice %v, kube-scheduler %v (the allocator alone: feasible on %v)\nclaims: %s", name, mix, s, k, slices.Sorted(maps.Keys(want)), specs)
		default:
			if k.node != "" {
				feasible++
			} else {
				infeasible++
			}
			if (k.node != "") != (len(want) > 0) {
				t.Errorf("mix %s %v: kube-scheduler %v, but the allocator alone finds it feasible on %v\nclaims: %s", name, mix, k, slices.Sorted(maps.Keys(want)), specs)
			}
			for _, o := range []oracleOutcome{s, k} {
				if o.node != "" && !want[model(o.node)] {
					t.Errorf("mix %s %v: bound to %s, but only %v could meet it\nclaims: %s", name, mix, o.node, slices.Sorted(maps.Keys(want)), specs)
				}
			}
			t.Logf("mix %s %v: Sluice %v, kube-scheduler %v; feasible on %v", name, mix, s, k, slices.Sorted(maps.Keys(want)))
		}
		if err := e.oracleClear(ctx); err != nil {
			t.Fatalf("after mix %s: %v", name, err)
		}
	}
	t.Logf("%d mixes: %d feasible and %d not for both schedulers, %d decided differently, %d refused by Sluice (all GPUs); %s",
		len(mixes), feasible, infeasible, differ, refused, time.Since(began).Round(time.Millisecond))
	if feasible < 10 || infeasible < 10 {
		t.Errorf("only %d feasible and %d infeasible mixes: the generator no longer tests both sides", feasible, infeasible)
	}
}
