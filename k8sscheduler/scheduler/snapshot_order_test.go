package scheduler

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// The core carries an unchanged job's running tasks over from the last cycle when the
// snapshot hands it the same Running slice, and finds the job at once when it keeps its
// place in the list (bridge/carry.go). The cache keeps both: jobs in the order their groups
// came, removed ones dropped, and a job rebuilt (new slices) only when it changed.
func TestSnapshotKeepsJobsInPlace(t *testing.T) {
	c := newCache()
	setTestNode(c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{v1alpha1.PartitionLabel: "p"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), v1alpha1.GPUResource: resource.MustParse("8")}}})
	c.setQueue("q", &bridge.Queue{Name: "q"})
	add := func(i int, node string) {
		name := fmt.Sprintf("p%d", i)
		c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}})
		c.setPod(podKey("ns", name), convertPod(testPod(name, "1", map[string]string{v1alpha1.PodGroupAnnotation: name}, node), "sluice"))
	}
	for i := range 6 {
		add(i, "n1")
	}
	ids := func(s *bridge.Snapshot) []string {
		var out []string
		for _, j := range s.Jobs {
			out = append(out, j.ID)
		}
		return out
	}
	running := func(s *bridge.Snapshot) map[string]*bridge.RunningTask {
		out := map[string]*bridge.RunningTask{}
		for i := range s.Jobs {
			if j := &s.Jobs[i]; len(j.Running) > 0 {
				out[j.ID] = &j.Running[0]
			}
		}
		return out
	}
	core := &bridge.Scheduler{}
	s1, _ := c.snapshot(time.Now())
	order1, run1 := ids(s1), running(s1)
	if len(order1) != 6 || len(run1) != 6 {
		t.Fatalf("jobs %v, %d running; want 6 running jobs", order1, len(run1))
	}
	core.Schedule(s1)
	for range 3 { // the map's order would differ from one snapshot to the next
		s, _ := c.snapshot(time.Now())
		if got := ids(s); !slices.Equal(got, order1) {
			t.Fatalf("jobs listed %v, then %v", order1, got)
		}
		core.Schedule(s)
	}

	c.deletePodGroup("ns/p2")
	c.setPod(podKey("ns", "p2"), nil) // p2 is gone
	c.setPod(podKey("ns", "p4"), nil) // p4 lost its pod: it changed
	add(6, "")                        // p6 came, pending
	s2, _ := c.snapshot(time.Now())
	want := slices.DeleteFunc(slices.Clone(order1), func(id string) bool { return id == "ns/p2" || id == "ns/p4" })
	want = append(want, "ns/p6")
	got := slices.DeleteFunc(ids(s2), func(id string) bool { return id == "ns/p4" })
	if !slices.Equal(got, want) {
		t.Fatalf("jobs listed %v after p2 went and p6 came, want %v in that order", ids(s2), want)
	}
	run2 := running(s2)
	for id, r := range run2 {
		if r != run1[id] {
			t.Errorf("job %s got a new Running slice though its pods did not change", id)
		}
	}
	if _, ok := run2["ns/p4"]; ok {
		t.Error("p4 still runs after its pod went")
	}
	if d, fresh := core.Schedule(s2), bridge.Schedule(s2); !reflect.DeepEqual(d, fresh) {
		t.Errorf("the reused core decided %+v, a fresh one %+v", d, fresh)
	}
}
