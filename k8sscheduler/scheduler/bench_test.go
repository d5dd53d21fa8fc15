package scheduler

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// benchCache is 500 nodes of 8 GPUs and 4000 single-GPU pods, each its own PodGroup,
// the first `pending` of them unbound and the rest bound: the benchmark scenario of the
// design brief.
func benchCache(b *testing.B, pending int) *cache { return benchCacheOf(b, pending, false) }

// benchCacheOf is benchCache; with constrained, every pod carries a required node affinity
// (zone a, which every node is in) and a toleration, as the scale benchmark's pods do.
func benchCacheOf(b *testing.B, pending int, constrained bool) *cache {
	c := newCache()
	c.slurmPods = true
	for i := range 500 {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%03d", i),
			Labels: map[string]string{v1alpha1.PartitionLabel: "h100", v1alpha1.GPUMemoryLabel: "81920"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("128"),
				corev1.ResourceMemory: resource.MustParse("1Ti"), v1alpha1.GPUResource: resource.MustParse("8")}}}
		n.Labels[corev1.LabelTopologyZone] = "a"
		bn, err := convertNode(n)
		if err != nil {
			b.Fatal(err)
		}
		c.setNode(bn, n)
	}
	c.setQueue("q", &bridge.Queue{Name: "q"})
	for i := range 4000 {
		name := fmt.Sprintf("p%04d", i)
		c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}})
		node := ""
		if i >= pending {
			node = fmt.Sprintf("n%03d", i/8)
		}
		p := testPod(name, "1", map[string]string{v1alpha1.PodGroupAnnotation: name}, node)
		if constrained {
			p.Spec.Affinity, p.Spec.Tolerations = zoneAffinity("a"), tolerateML
		}
		c.setPod(podKey("ns", name), convertPod(p, "sluice"))
	}
	return c
}

// BenchmarkSnapshot measures building a cycle's snapshot when one pod changed since the
// last cycle (the steady state), and BenchmarkCycle adds the core's Schedule to it.
//
//	go test -run '^$' -bench 'Snapshot|Cycle' -benchmem ./k8sscheduler/scheduler/
func BenchmarkSnapshot(b *testing.B) {
	c := benchCache(b, 2000)
	c.snapshot(time.Now())
	p := testPod("p0001", "1", map[string]string{v1alpha1.PodGroupAnnotation: "p0001"}, "")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Spec.NodeName = []string{"", "n000"}[i%2]
		c.setPod("ns/p0001", convertPod(p, "sluice"))
		c.snapshot(time.Now())
	}
}

// BenchmarkCycle is a cycle over the cache as the backlog starts (4000 pods, 4000
// pending) and in a stream's steady state (a handful pending, the rest bound); with
// constrained=true every pod has a node affinity and a toleration (benchCacheOf).
func BenchmarkCycle(b *testing.B) {
	for _, constrained := range []bool{false, true} {
		for _, pending := range []int{4000, 2000, 10} {
			b.Run(fmt.Sprintf("constrained=%v/pending=%d", constrained, pending), func(b *testing.B) {
				c := benchCacheOf(b, pending, constrained)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s, _ := c.snapshot(time.Now())
					d := bridge.Schedule(s)
					if len(d.Binds) != pending {
						b.Fatalf("%d binds, want %d", len(d.Binds), pending)
					}
				}
			})
		}
	}
}
