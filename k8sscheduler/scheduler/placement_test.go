package scheduler

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// placementNodes are four nodes of partition p: zones a and b, racks r1 and r2; n-b2 is
// tainted dedicated=ml:NoSchedule, n-a2 takes one pod only.
func placementNodes() []*corev1.Node {
	node := func(name, zone, rack string, pods string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.PartitionLabel: "p",
			corev1.LabelTopologyZone: zone, "rack": rack, corev1.LabelHostname: name}},
			Spec: corev1.NodeSpec{Taints: taints},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"),
				corev1.ResourceMemory: resource.MustParse("64Gi"), v1alpha1.GPUResource: resource.MustParse("8"),
				corev1.ResourcePods: resource.MustParse(pods)}}}
	}
	return []*corev1.Node{
		node("n-a1", "a", "r1", "110"),
		node("n-a2", "a", "r1", "1"),
		node("n-b1", "b", "r2", "110"),
		node("n-b2", "b", "r2", "110", corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}),
	}
}

func zoneAffinity(zones ...string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones}}}}}}}
}

var tolerateML = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule}}

// kubeAccepts is kube-scheduler's verdict on a pod and node for the filters Sluice takes
// from component-helpers: NodeAffinity (with nodeSelector) and TaintToleration.
func kubeAccepts(pod *corev1.Pod, n *corev1.Node) bool {
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n); !ok || err != nil {
		return false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	return !untolerated
}

// TestPodConstraintsPlaceWhereKubeWould: each pod, alone, binds to a node kube-scheduler's
// own filters accept, or waits with a reason when none does.
func TestPodConstraintsPlaceWhereKubeWould(t *testing.T) {
	nodes := placementNodes()
	tests := []struct {
		name     string
		mut      func(*corev1.Pod)
		wantWait string // pending code; "" when it must bind
	}{
		{name: "plain pod avoids the tainted node", mut: func(*corev1.Pod) {}},
		{name: "node affinity zone b", mut: func(p *corev1.Pod) { p.Spec.Affinity = zoneAffinity("b") }},
		{name: "toleration and zone b may use the tainted node", mut: func(p *corev1.Pod) {
			p.Spec.Affinity, p.Spec.Tolerations = zoneAffinity("b"), tolerateML
		}},
		{name: "nodeSelector", mut: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"rack": "r2"} }},
		{name: "affinity by node name (matchFields)", mut: func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
					{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n-a2"}}}}}}}}
		}},
		{name: "no zone c", mut: func(p *corev1.Pod) { p.Spec.Affinity = zoneAffinity("c") }, wantWait: bridge.ReasonBadConstraints},
		{name: "host port", mut: func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache()
			for _, n := range nodes {
				setTestNode(c, n)
			}
			pod := testPod("a", "1", nil, "")
			tt.mut(pod)
			c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}})
			c.setPod("ns/a", convertPod(pod, "sluice"))
			c.setQueue("q", &bridge.Queue{Name: "q"})
			snap, _ := c.snapshot(metav1.Now().Time)
			d := bridge.Schedule(snap)
			if tt.wantWait != "" {
				if len(d.Binds) != 0 || len(d.Pending) != 1 || d.Pending[0].Code != tt.wantWait {
					t.Fatalf("binds %+v pending %+v, want it pending with %s", d.Binds, d.Pending, tt.wantWait)
				}
				return
			}
			if len(d.Binds) != 1 {
				t.Fatalf("binds %+v pending %+v problems %+v, want one bind", d.Binds, d.Pending, d.Problems)
			}
			for _, n := range nodes {
				if n.Name == d.Binds[0].Node && !kubeAccepts(pod, n) {
					t.Errorf("bound to %s, which kube-scheduler refuses for this pod", n.Name)
				}
			}
		})
	}
}

// Pods with equal constraints share one node set, computed once until a node changes.
func TestNodeClassesAreSharedAndCached(t *testing.T) {
	c := newCache()
	for _, n := range placementNodes() {
		setTestNode(c, n)
	}
	c.setQueue("q", &bridge.Queue{Name: "q"})
	for i := range 20 {
		name := fmt.Sprintf("p%02d", i)
		pod := testPod(name, "1", map[string]string{v1alpha1.PodGroupAnnotation: name}, "")
		pod.Spec.Affinity, pod.Spec.Tolerations = zoneAffinity("b"), tolerateML
		c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}})
		c.setPod("ns/"+name, convertPod(pod, "sluice"))
	}
	snap, _ := c.snapshot(metav1.Now().Time)
	if len(snap.NodeSets) != 1 || len(snap.NodeSets[0].Nodes) != 2 {
		t.Fatalf("node sets %+v, want one of n-b1 and n-b2", snap.NodeSets)
	}
	cl := c.classes[snap.NodeSets[0].Name]
	gen := cl.gen
	snap, _ = c.snapshot(metav1.Now().Time)
	if c.classes[snap.NodeSets[0].Name] != cl || cl.gen != gen {
		t.Errorf("the class was computed again although no node changed")
	}
	n := placementNodes()[3]
	n.Spec.Taints = nil
	setTestNode(c, n)
	snap, _ = c.snapshot(metav1.Now().Time)
	if cl.gen == gen || len(snap.NodeSets) != 1 || len(snap.NodeSets[0].Nodes) != 2 {
		t.Errorf("after a node changed: gen %d (was %d), node sets %+v", cl.gen, gen, snap.NodeSets)
	}
}

// The node's pod count and host ports are counted like resources: a node full of pods,
// or whose port another pod holds, takes no more.
func TestPodCountAndHostPorts(t *testing.T) {
	c := newCache()
	for _, n := range placementNodes() {
		setTestNode(c, n)
	}
	c.setQueue("q", &bridge.Queue{Name: "q"})
	// n-a2 holds one pod, of another scheduler; n-a1 a pod with host port 9000.
	foreign := testPod("f", "", nil, "n-a2")
	foreign.Spec.SchedulerName = "default-scheduler"
	c.setPod("ns/f", convertPod(foreign, "sluice"))
	porter := testPod("g", "", nil, "n-a1")
	porter.Spec.SchedulerName = "default-scheduler"
	porter.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9000, HostPort: 9000}}
	c.setPod("ns/g", convertPod(porter, "sluice"))
	// Two pods need port 9000 in zone a: neither n-a1 (port taken) nor n-a2 (full) can take one.
	for _, name := range []string{"x", "y"} {
		pod := testPod(name, "1", map[string]string{v1alpha1.PodGroupAnnotation: name}, "")
		pod.Spec.Affinity = zoneAffinity("a")
		pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9000, HostPort: 9000}}
		c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}})
		c.setPod("ns/"+name, convertPod(pod, "sluice"))
	}
	snap, _ := c.snapshot(metav1.Now().Time)
	d := bridge.Schedule(snap)
	if len(d.Binds) != 0 || len(d.Pending) != 2 {
		t.Fatalf("binds %+v pending %+v, want both pending", d.Binds, d.Pending)
	}
	// Without the port, one fits on n-a1, not two (n-a2 is full): the gang of x waits.
	c.setPod("ns/g", nil)
	snap, _ = c.snapshot(metav1.Now().Time)
	d = bridge.Schedule(snap)
	if len(d.Binds) != 1 || d.Binds[0].Node != "n-a1" {
		t.Fatalf("binds %+v pending %+v, want one bind on n-a1", d.Binds, d.Pending)
	}
}

// A gang annotated with KAI's required topology lands inside one rack; Sluice's own
// annotation and a preferred level work the same way.
func TestTopologyAnnotations(t *testing.T) {
	for _, ann := range []string{v1alpha1.KAITopologyRequiredAnnotation, v1alpha1.TopologyRequiredAnnotation, v1alpha1.TopologyPreferredAnnotation} {
		t.Run(ann, func(t *testing.T) {
			c := newCache()
			for _, n := range placementNodes() {
				setTestNode(c, n)
			}
			c.setQueue("q", &bridge.Queue{Name: "q"})
			// r1's n-a1 is the fullest node (binpack would start there) but rack r1 holds one
			// pod of the gang only: n-a2 takes a single pod and runs one.
			for name, node := range map[string]string{"busy": "n-a1", "full": "n-a2"} {
				gpus := map[string]string{"busy": "6", "full": ""}[name]
				p := testPod(name, gpus, map[string]string{v1alpha1.PodGroupAnnotation: name}, node)
				p.Spec.SchedulerName = "default-scheduler"
				c.setPod("ns/"+name, convertPod(p, "sluice"))
			}
			c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns", Annotations: map[string]string{ann: "rack"}},
				Spec: v1alpha1.PodGroupSpec{MinMember: 2, Queue: "q"}})
			for _, name := range []string{"w0", "w1"} {
				pod := testPod(name, "2", nil, "")
				pod.Spec.Tolerations = tolerateML
				c.setPod("ns/"+name, convertPod(pod, "sluice"))
			}
			snap, _ := c.snapshot(metav1.Now().Time)
			d := bridge.Schedule(snap)
			if len(d.Binds) != 2 {
				t.Fatalf("binds %+v pending %+v, want 2", d.Binds, d.Pending)
			}
			for _, b := range d.Binds {
				if b.Node != "n-b1" && b.Node != "n-b2" {
					t.Errorf("%s bound to %s, outside rack r2", b.Task, b.Node)
				}
			}
		})
	}
}

// A Slurm job's node affinity (from --constraint, -w, -x) and one pod per node come from
// its PodGroup.
func TestSlurmJobPlacement(t *testing.T) {
	c := newCache()
	c.slurmPods = true
	for _, n := range placementNodes() {
		setTestNode(c, n)
	}
	c.setQueue("q", &bridge.Queue{Name: "q"})
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-1", Namespace: "ns", Annotations: map[string]string{
		v1alpha1.NodeAffinityAnnotation:   `{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"NotIn","values":["n-a1"]}]}]}`,
		v1alpha1.NodeConstraintAnnotation: "--exclude=n-a1",
	}}, Spec: v1alpha1.PodGroupSpec{MinMember: 2, Queue: "q", Slurm: &v1alpha1.SlurmJob{User: "alice"},
		Members: []v1alpha1.MemberSet{{Name: "nodes", Count: 2, Resources: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")}}}}}
	c.setPodGroup(pg)
	snap, _ := c.snapshot(metav1.Now().Time)
	d := bridge.Schedule(snap)
	if len(d.Binds) != 2 || d.Binds[0].Node == d.Binds[1].Node {
		t.Fatalf("binds %+v pending %+v, want two on different nodes", d.Binds, d.Pending)
	}
	for _, b := range d.Binds {
		if b.Node == "n-a1" || b.Node == "n-b2" {
			t.Errorf("bound to %s: excluded or tainted", b.Node)
		}
	}
	pg = pg.DeepCopy()
	pg.Generation++
	pg.Spec.Members[0].Count = 3
	pg.Spec.MinMember = 3
	c.setPodGroup(pg)
	snap, _ = c.snapshot(metav1.Now().Time)
	d = bridge.Schedule(snap)
	if len(d.Binds) != 0 || len(d.Pending) != 1 || d.Pending[0].Code != bridge.ReasonBadConstraints {
		t.Fatalf("binds %+v pending %+v, want 3 nodes refused (only 2 allowed)", d.Binds, d.Pending)
	}
}

// A pod's constraints are read again only when its tolerations grew (the one change the
// API server allows them); another version of the pod reuses them.
func TestConstraintsReusedAcrossPodVersions(t *testing.T) {
	p := testPod("a", "1", nil, "")
	p.UID = "u1"
	p.Spec.Affinity = zoneAffinity("b")
	first := convertPod(p, "sluice")
	p.Spec.NodeName = "n-b1"
	if again := convertPodAfter(p, "sluice", first); again.cons != first.cons {
		t.Errorf("a bound version of the pod read its constraints again")
	}
	p.Spec.Tolerations = tolerateML
	if grown := convertPodAfter(p, "sluice", first); grown.cons == first.cons || grown.consKey() == first.consKey() {
		t.Errorf("a toleration added to the pod did not change its constraints")
	}
}

// A gang whose pods spread over zones (DoNotSchedule, selecting themselves) goes two to a
// zone, where binpack alone would fill zone a first.
func TestTopologySpreadConstraints(t *testing.T) {
	c := newCache()
	for _, n := range placementNodes() {
		setTestNode(c, n)
	}
	c.setQueue("q", &bridge.Queue{Name: "q"})
	c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 4, Queue: "q"}})
	for i := range 4 {
		name := fmt.Sprintf("w%d", i)
		pod := testPod(name, "1", nil, "")
		pod.Labels["app"] = "train"
		pod.Spec.Tolerations = tolerateML
		pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "train"}}}}
		c.setPod("ns/"+name, convertPod(pod, "sluice"))
	}
	snap, _ := c.snapshot(metav1.Now().Time)
	d := bridge.Schedule(snap)
	perZone := map[string]int{}
	for _, b := range d.Binds {
		perZone[b.Node[2:3]]++ // n-a1 -> a
	}
	if len(d.Binds) != 4 || perZone["a"] != 2 || perZone["b"] != 2 {
		t.Errorf("binds %+v (per zone %v), want two in each zone", d.Binds, perZone)
	}
}

// TestHostPortsCountedOncePerPod: a port named by an init container and an app container
// takes one of the node's port, so the pod fits; a plain init container's port is free
// again once it ends (kube-scheduler's NodePorts counts only sidecars).
func TestHostPortsCountedOncePerPod(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	port := []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
	spec := corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: &always, Ports: port}, {Name: "setup", Ports: []corev1.ContainerPort{{HostPort: 9090}}}},
		Containers:     []corev1.Container{{Name: "main", Ports: port}},
	}
	got := map[string]int64{}
	for _, q := range podRequest(&spec).Extended {
		got[q.Name] = q.Value
	}
	if got[hostPortResource("", 8080)] != 1 || got[hostPortResource("", 9090)] != 0 {
		t.Errorf("extended %v, want host port 8080 once and 9090 not at all", got)
	}
}

// --switches=1@MAX_TIME holds a Slurm job to one rack only until it has waited MAX_TIME
// since submission; then it may span racks, as Slurm drops the switch count.
func TestSwitchesWaitEnds(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		wait, waited string
		want         string
	}{{"3600", "10m", "rack"}, {"60", "10m", ""}, {"", "10h", "rack"}} {
		c := newCache()
		c.slurmPods = true
		for _, n := range placementNodes() {
			setTestNode(c, n)
		}
		c.setPartition("p", &partitionEntry{p: bridge.Partition{Name: "p", Topology: []string{"rack"}}})
		waited, _ := time.ParseDuration(tc.waited)
		ann := map[string]string{v1alpha1.SwitchesAnnotation: "1", v1alpha1.SubmitTimeAnnotation: now.Add(-waited).Format(time.RFC3339Nano)}
		if tc.wait != "" {
			ann[v1alpha1.SwitchesWaitAnnotation] = tc.wait
		}
		c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-1", Namespace: "ns", Annotations: ann},
			Spec: v1alpha1.PodGroupSpec{MinMember: 2, Queue: "q", Partition: "p", Slurm: &v1alpha1.SlurmJob{User: "alice"},
				Members: []v1alpha1.MemberSet{{Name: "nodes", Count: 2}}}})
		snap, _ := c.snapshot(now)
		if len(snap.Jobs) != 1 || snap.Jobs[0].Placement.RequiredLevel != tc.want {
			t.Errorf("wait %s, waited %s: jobs %+v, want required level %q", tc.wait, tc.waited, snap.Jobs, tc.want)
		}
	}
}
