package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A Slurm job's partition list (-p q,p) and matching or (--constraint [a|b]) reach the
// core as alternatives in order: partitions first, each with every choice; the job runs in
// the first that can start.
func TestSlurmJobAlternatives(t *testing.T) {
	c := newCache()
	c.slurmPods = true
	nodes := placementNodes() // partition p: zones a (n-a1, n-a2) and b (n-b1, n-b2 tainted)
	q := nodes[0].DeepCopy()
	q.Name, q.Labels[v1alpha1.PartitionLabel], q.Labels[corev1.LabelHostname] = "n-q1", "q", "n-q1"
	for _, n := range append(nodes, q) {
		setTestNode(c, n)
	}
	c.setQueue("q", &bridge.Queue{Name: "q"})
	job := func(name, partitions string, members int32, ann map[string]string) *v1alpha1.PodGroup {
		if ann == nil {
			ann = map[string]string{}
		}
		ann[v1alpha1.PartitionsAnnotation] = partitions
		return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: ann},
			Spec: v1alpha1.PodGroupSpec{MinMember: members, Queue: "q", Partition: partitions[:1], Slurm: &v1alpha1.SlurmJob{User: "alice"},
				Members: []v1alpha1.MemberSet{{Name: "nodes", Count: members, Resources: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("8")}}}}}
	}
	zone := func(z string) string {
		return `{"nodeSelectorTerms":[{"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["` + z + `"]}]}]}`
	}
	c.setPodGroup(job("first-q", "q,p", 1, nil))
	// Zone b has one node the job may use (n-b2 is tainted): its two nodes go to zone a.
	c.setPodGroup(job("zones", "p,q", 2, map[string]string{
		v1alpha1.NodeAffinityChoicesAnnotation: "[" + zone("b") + "," + zone("a") + "]",
		v1alpha1.NodeConstraintAnnotation:      "--constraint=[zb|za]",
	}))
	snap, _ := c.snapshot(metav1.Now().Time)
	for _, j := range snap.Jobs {
		if j.ID == "ns/zones" && (len(j.Alternatives) != 4 || j.Alternatives[0].Partition != "p" || j.Alternatives[2].Partition != "q" ||
			j.Alternatives[0].NodeSet == "" || j.Alternatives[0].NodeSet == j.Alternatives[1].NodeSet) {
			t.Errorf("alternatives of %s: %+v", j.ID, j.Alternatives)
		}
	}
	d := bridge.Schedule(snap)
	got := map[string][]string{}
	for _, b := range d.Binds {
		got[b.Job] = append(got[b.Job], b.Node)
	}
	if len(got["ns/first-q"]) != 1 || got["ns/first-q"][0] != "n-q1" {
		t.Errorf("first-q bound to %v, want n-q1 (its first partition)", got["ns/first-q"])
	}
	if z := got["ns/zones"]; len(z) != 2 || z[0] == z[1] || (z[0] != "n-a1" && z[0] != "n-a2") || (z[1] != "n-a1" && z[1] != "n-a2") {
		t.Errorf("zones bound to %v, want n-a1 and n-a2 (zone a, its second choice); pending %+v", z, d.Pending)
	}
	c.setPodGroup(job("nowhere", "p", 2, map[string]string{v1alpha1.NodeAffinityChoicesAnnotation: "not json"}))
	c.snapshot(metav1.Now().Time)
	if b := c.groups["ns/nowhere"].blocked; b == nil || b.Code != bridge.ReasonBadConstraints {
		t.Errorf("malformed choices: blocked %+v, want BadConstraints", b)
	}
}

// --switches=1 with -p p,q keeps to each listed partition's own innermost level: q's in q,
// none in p (it has no topology), and none for the job as a whole.
func TestSwitchesPerListedPartition(t *testing.T) {
	c := newCache()
	c.slurmPods = true
	for _, n := range placementNodes() {
		setTestNode(c, n)
	}
	c.setPartition("q", &partitionEntry{p: bridge.Partition{Name: "q", Topology: []string{"zone", "switch"}}})
	c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-1", Namespace: "ns",
		Annotations: map[string]string{v1alpha1.SwitchesAnnotation: "1", v1alpha1.PartitionsAnnotation: "p,q"}},
		Spec: v1alpha1.PodGroupSpec{MinMember: 2, Queue: "q", Partition: "p", Slurm: &v1alpha1.SlurmJob{User: "alice"},
			Members: []v1alpha1.MemberSet{{Name: "nodes", Count: 2}}}})
	snap, _ := c.snapshot(metav1.Now().Time)
	if len(snap.Jobs) != 1 {
		t.Fatalf("jobs %+v", snap.Jobs)
	}
	j := snap.Jobs[0]
	want := []bridge.Alternative{{Partition: "p"}, {Partition: "q", RequiredLevel: "switch"}}
	if j.Placement.RequiredLevel != "" || len(j.Alternatives) != 2 || j.Alternatives[0] != want[0] || j.Alternatives[1] != want[1] {
		t.Errorf("placement %+v alternatives %+v, want %+v", j.Placement, j.Alternatives, want)
	}
}
