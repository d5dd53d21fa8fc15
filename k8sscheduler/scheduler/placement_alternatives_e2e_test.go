package scheduler

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
)

// alternativePools are two partitions of one 8-GPU node each, for sbatch -p alt-a,alt-b.
func alternativePools() []cluster.NodePool {
	pool := func(name string) cluster.NodePool {
		return cluster.NodePool{Name: name, Count: 1, GPUsPerNode: 8, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "64", Memory: "512Gi",
			Labels: map[string]string{v1alpha1.PartitionLabel: name}}
	}
	return []cluster.NodePool{pool("alt-a"), pool("alt-b")}
}

// A Slurm job listing partitions (-p alt-a,alt-b) waits with the reason of its best
// choice while none has room, runs in the listed one that has room when one frees, and
// its PodGroup then names the partition it runs in.
func TestPartitionListOnRig(t *testing.T) {
	e := setup(t)
	e.queue("alt-q", "alt-a", 0)
	e.runWith(&memberPods{})
	e.fillNodes(map[string]string{"alt-blocker-a": cluster.NodeName("alt-a", 0), "alt-blocker-b": cluster.NodeName("alt-b", 0)})
	e.create(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-11", Namespace: e.ns,
		Annotations: map[string]string{v1alpha1.PartitionsAnnotation: "alt-a,alt-b"}},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "alt-q", Partition: "alt-a", Slurm: &v1alpha1.SlurmJob{User: "alice"},
			Members: []v1alpha1.MemberSet{{Name: "node", Count: 1, Resources: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("8")}}}}})
	c := e.condition("job-11", v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong)
	if c.Reason != bridge.ReasonResources || !strings.Contains(c.Message, "partition alt-a") {
		t.Errorf("pending condition %+v, want Resources in partition alt-a (its first choice)", c)
	}
	e.deletePod("alt-blocker-b")
	nodes := e.waitBound([]string{"job-11-0"}, waitLong)
	if nodes[0] != cluster.NodeName("alt-b", 0) {
		t.Errorf("job on %v, want %s (partition alt-b, the one with room)", nodes, cluster.NodeName("alt-b", 0))
	}
	pg := &v1alpha1.PodGroup{}
	if err := e.crs.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "job-11"}, pg); err != nil {
		t.Fatal(err)
	}
	if pg.Spec.Partition != "alt-b" || pg.Labels[v1alpha1.PartitionLabel] != "alt-b" || pg.Annotations[v1alpha1.PartitionsAnnotation] != "alt-a,alt-b" {
		t.Errorf("started job's partition %q label %q list %q, want alt-b, alt-b and the list kept", pg.Spec.Partition,
			pg.Labels[v1alpha1.PartitionLabel], pg.Annotations[v1alpha1.PartitionsAnnotation])
	}
}
