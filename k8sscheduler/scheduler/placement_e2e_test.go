package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// placementPools are the rig's nodes for the placement tests: partition plc has zone a
// (rack r1) and zone b (rack r2), two nodes each; partition rk has racks r1 and r2 of two
// 8-GPU nodes each.
func placementPools() []cluster.NodePool {
	pool := func(name, part string, labels map[string]string) cluster.NodePool {
		l := map[string]string{v1alpha1.PartitionLabel: part}
		for k, v := range labels {
			l[k] = v
		}
		return cluster.NodePool{Name: name, Count: 2, GPUsPerNode: 8, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "64", Memory: "512Gi", Labels: l}
	}
	return []cluster.NodePool{
		pool("plc-a", "plc", map[string]string{corev1.LabelTopologyZone: "a", "rack": "r1"}),
		pool("plc-b", "plc", map[string]string{corev1.LabelTopologyZone: "b", "rack": "r2"}),
		pool("rk-1", "rk", map[string]string{"rack": "r1"}),
		pool("rk-2", "rk", map[string]string{"rack": "r2"}),
	}
}

// taint puts a taint on a node for the rest of the test.
func (e *env) taint(node string, t corev1.Taint) {
	e.t.Helper()
	patch := func(taints []corev1.Taint) error {
		raw, _ := json.Marshal(map[string]any{"spec": map[string]any{"taints": taints}})
		_, err := e.rig.Client().CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, raw, metav1.PatchOptions{})
		return err
	}
	if err := patch([]corev1.Taint{t}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = patch(nil) })
}

// createPod creates a pod of 100m CPU, shaped by mut.
func (e *env) createPod(name string, mut func(*corev1.Pod)) {
	e.t.Helper()
	zero := int64(0)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	mut(p)
	if _, err := e.rig.Client().CoreV1().Pods(e.ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create pod %s: %v", name, err)
	}
}

// deletePod deletes a pod and waits until it is gone, so what it held is free.
func (e *env) deletePod(name string) {
	e.t.Helper()
	zero := int64(0)
	pods := e.rig.Client().CoreV1().Pods(e.ns)
	if err := pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		e.t.Fatal(err)
	}
	e2e.WaitFor(e.t, "pod "+name+" gone", waitLong, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("still there (%v)", err)
	})
}

// waitUnschedulable waits until kube-scheduler has marked a pod unschedulable.
func (e *env) waitUnschedulable(name string) {
	e.t.Helper()
	e2e.WaitFor(e.t, "kube-scheduler refuses pod "+name, waitLong, func(ctx context.Context) (bool, error) {
		p, err := e.rig.Client().CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("bound to %s", p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", p.Status.Conditions)
	})
}

// TestPlacementAgreesWithKubeScheduler is the oracle: for each pod spec, one per kind of
// node constraint, the node Sluice binds it to is one kube-scheduler (running on the rig)
// binds the same pod to when it may use that node only; a pod no node satisfies stays
// pending under both, with a reason from Sluice.
func TestPlacementAgreesWithKubeScheduler(t *testing.T) {
	e := setup(t)
	e.create(&v1alpha1.Partition{ObjectMeta: metav1.ObjectMeta{Name: "plc"},
		Spec: v1alpha1.PartitionSpec{NodeSelector: map[string]string{v1alpha1.PartitionLabel: "plc"}, Topology: []string{"rack"}}})
	e.queue("plc-q", "plc", 0)
	tainted := cluster.NodeName("plc-b", 1)
	e.taint(tainted, corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule})
	e.run()

	nameIs := func(op corev1.NodeSelectorOperator, names ...string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: op, Values: names}}}}}}}
	}
	a0, a1, b0 := cluster.NodeName("plc-a", 0), cluster.NodeName("plc-a", 1), cluster.NodeName("plc-b", 0)
	// anchor is kube-scheduler's pod on a1, which the pod affinity cases select.
	e.createPod("anchor", func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "anchor"}
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: a1}
	})
	e.waitBound([]string{"anchor"}, waitLong)
	podAff := func(anti bool, key string, namespaces ...string) func(*corev1.Pod) {
		term := corev1.PodAffinityTerm{TopologyKey: key, Namespaces: namespaces,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anchor"}}}
		return func(p *corev1.Pod) {
			terms := []corev1.PodAffinityTerm{term}
			if anti {
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}}
			} else {
				p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}}
			}
		}
	}
	e.localVolume("local-data", b0)
	mountLocal := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "local-data"}}}}
	}
	cases := []struct {
		name    string
		mut     func(*corev1.Pod)
		allowed []string // nil: no node may take it
		reason  string   // for a pod no node takes: what the pending reason says; "" for "matches"
	}{
		{"plain pod: not the tainted node", func(*corev1.Pod) {}, []string{a0, a1, b0}, ""},
		{"nodeSelector", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"rack": "r2"} }, []string{b0}, ""},
		{"node affinity and toleration", func(p *corev1.Pod) { p.Spec.Affinity, p.Spec.Tolerations = zoneAffinity("b"), tolerateML }, []string{b0, tainted}, ""},
		{"affinity by node name", func(p *corev1.Pod) { p.Spec.Affinity = nameIs(corev1.NodeSelectorOpIn, a1) }, []string{a1}, ""},
		{"nodeSelector and affinity together", func(p *corev1.Pod) {
			p.Spec.NodeSelector, p.Spec.Affinity = map[string]string{"rack": "r1"}, nameIs(corev1.NodeSelectorOpNotIn, a0)
		}, []string{a1}, ""},
		{"host port", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 30080}}
		}, []string{a0, a1, b0}, ""},
		{"only a node whose taint it does not tolerate", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: tainted}
		}, nil, ""},
		{"a zone no node is in", func(p *corev1.Pod) { p.Spec.Affinity = zoneAffinity("c") }, nil, ""},
		{"bound local volume", mountLocal, []string{b0}, ""},
		{"preferred node affinity: the best-scoring node", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
				{Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r2"}}}}}}}}
		}, []string{b0}, ""},
		{"pod affinity by hostname", podAff(false, corev1.LabelHostname), []string{a1}, ""},
		{"pod anti-affinity by rack", podAff(true, "rack"), []string{b0}, ""},
		{"pod affinity to a namespace where nothing matches", podAff(false, "rack", "elsewhere"), nil, "podAffinity app=anchor in namespaces elsewhere"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			ours, theirs := fmt.Sprintf("sluice-%d", i), fmt.Sprintf("kube-%d", i)
			e.create(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: ours, Namespace: e.ns},
				Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "plc-q", Partition: "plc"}})
			e.createPod(ours, func(p *corev1.Pod) {
				p.Spec.SchedulerName = v1alpha1.DefaultSchedulerName
				p.Annotations = map[string]string{v1alpha1.PodGroupAnnotation: ours}
				tc.mut(p)
			})
			if tc.allowed == nil {
				c := e.condition(ours, v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong)
				want := tc.reason
				if want == "" {
					want = "matches"
				}
				if c.Reason != bridge.ReasonBadConstraints || !strings.Contains(c.Message, want) {
					t.Errorf("pending condition %+v, want BadConstraints saying %q", c, want)
				}
				e.createPod(theirs, tc.mut)
				e.waitUnschedulable(theirs)
				return
			}
			node := e.waitBound([]string{ours}, waitLong)[0]
			if !slices.Contains(tc.allowed, node) {
				t.Errorf("Sluice bound it to %s, want one of %v", node, tc.allowed)
			}
			e.deletePod(ours)
			e.createPod(theirs, func(p *corev1.Pod) {
				tc.mut(p)
				if p.Spec.NodeSelector == nil {
					p.Spec.NodeSelector = map[string]string{}
				}
				if have, ok := p.Spec.NodeSelector[corev1.LabelHostname]; ok && have != node {
					t.Fatalf("the case pins %s, Sluice chose %s", have, node)
				}
				p.Spec.NodeSelector[corev1.LabelHostname] = node
			})
			if got := e.waitBound([]string{theirs}, waitLong)[0]; got != node {
				t.Errorf("kube-scheduler bound the pod to %s, Sluice to %s", got, node)
			}
			e.deletePod(theirs)
		})
	}
}

// A 2-node gang that requires one rack waits, with a reason naming the rack level, while
// each rack has only one free node (together they would hold it); once a rack frees up it
// lands inside that rack, although binpack alone would split it over both. Then the same
// for a Slurm job with --switches=1 (the partition's innermost level, rack).
func TestRackGang(t *testing.T) {
	e := setup(t)
	e.create(&v1alpha1.Partition{ObjectMeta: metav1.ObjectMeta{Name: "rk"},
		Spec: v1alpha1.PartitionSpec{NodeSelector: map[string]string{v1alpha1.PartitionLabel: "rk"}, Topology: []string{"rack"}}})
	e.queue("rk-q", "rk", 0)
	e.runWith(&memberPods{})
	e.fillNodes(map[string]string{"blocker-1": cluster.NodeName("rk-1", 0), "blocker-2": cluster.NodeName("rk-2", 1)})

	gang := e.rackGang("gang", 8, map[string]string{v1alpha1.KAITopologyRequiredAnnotation: "rack"})
	c := e.condition("gang", v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong)
	if c.Reason != bridge.ReasonResources || !strings.Contains(c.Message, "rack") {
		t.Errorf("pending condition %+v, want Resources naming the rack level", c)
	}
	for _, n := range gang {
		if node := e.pod(n).Spec.NodeName; node != "" {
			t.Fatalf("%s bound to %s while no rack has room", n, node)
		}
	}
	e.deletePod("blocker-2")
	nodes := e.waitBound(gang, waitLong)
	slices.Sort(nodes)
	if want := []string{cluster.NodeName("rk-2", 0), cluster.NodeName("rk-2", 1)}; !slices.Equal(nodes, want) {
		t.Errorf("gang on %v, want %v (rack r2)", nodes, want)
	}

	// Free one node of r2: rk-1-1 and rk-2-0 are free, in two racks. A 2-node Slurm job
	// with --switches=1 (one pod per node, as every Slurm job) would fit across them, and
	// waits.
	for _, n := range gang {
		if e.pod(n).Spec.NodeName == cluster.NodeName("rk-2", 0) {
			e.deletePod(n)
		}
	}
	e.create(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-9", Namespace: e.ns,
		Annotations: map[string]string{v1alpha1.SwitchesAnnotation: "1"}},
		Spec: v1alpha1.PodGroupSpec{MinMember: 2, Queue: "rk-q", Partition: "rk", Slurm: &v1alpha1.SlurmJob{User: "alice"},
			Members: []v1alpha1.MemberSet{{Name: "node", Count: 2, Resources: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("4")}}}}})
	c = e.condition("job-9", v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong)
	if c.Reason != bridge.ReasonResources || !strings.Contains(c.Message, "rack") {
		t.Errorf("Slurm job's pending condition %+v, want Resources naming the rack level", c)
	}
	e.deletePod("blocker-1")
	nodes = e.waitBound([]string{"job-9-0", "job-9-1"}, waitLong)
	slices.Sort(nodes)
	if want := []string{cluster.NodeName("rk-1", 0), cluster.NodeName("rk-1", 1)}; !slices.Equal(nodes, want) {
		t.Errorf("Slurm job on %v, want %v (rack r1)", nodes, want)
	}
}

// fillNodes takes each node's 8 GPUs with a pod of kube-scheduler's (pod name -> node),
// and waits until they are bound.
func (e *env) fillNodes(pods map[string]string) {
	e.t.Helper()
	var names []string
	for name, node := range pods {
		e.createPod(name, func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
			p.Spec.Containers[0].Resources.Requests[v1alpha1.GPUResource] = resource.MustParse("8")
			p.Spec.Containers[0].Resources.Limits = gpuLimit(8)
		})
		names = append(names, name)
	}
	e.waitBound(names, waitLong)
}

// rackGang creates a 2-pod gang in partition rk, each pod asking for gpus GPUs.
func (e *env) rackGang(name string, gpus int64, ann map[string]string) []string {
	e.t.Helper()
	e.create(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Annotations: ann},
		Spec: v1alpha1.PodGroupSpec{MinMember: 2, Queue: "rk-q", Partition: "rk"}})
	var names []string
	for i := range 2 {
		pod := fmt.Sprintf("%s-%d", name, i)
		e.createPod(pod, func(p *corev1.Pod) {
			p.Spec.SchedulerName = v1alpha1.DefaultSchedulerName
			p.Annotations = map[string]string{v1alpha1.PodGroupAnnotation: name}
			p.Spec.Containers[0].Resources.Requests[v1alpha1.GPUResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
			p.Spec.Containers[0].Resources.Limits = gpuLimit(gpus)
		})
		names = append(names, pod)
	}
	return names
}

// localVolume makes a claim bound to a local PersistentVolume on one node, and waits until
// the cluster's volume controller has bound them.
func (e *env) localVolume(name, node string) {
	e.t.Helper()
	ctx := context.Background()
	none := ""
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              none,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/data"}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: e.ns, Name: name},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}},
		}}
	if _, err := e.rig.Client().CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.rig.Client().CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &none, VolumeName: pv.Name,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := e.rig.Client().CoreV1().PersistentVolumeClaims(e.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e2e.WaitFor(e.t, "claim "+name+" bound", waitLong, func(ctx context.Context) (bool, error) {
		got, err := e.rig.Client().CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.Phase == corev1.ClaimBound, fmt.Errorf("phase %s", got.Status.Phase)
	})
}
