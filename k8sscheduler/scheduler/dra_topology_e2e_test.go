package scheduler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
)

// cliqueLevel is the NVLink clique as the DRA driver publishes it, an attribute of each
// GPU device, named as a partition's topology level.
const cliqueLevel = cluster.DRADriver + "/" + cluster.DRAAttrCliqueID

// draCliquePool is 4 DRA nodes of 2 GPUs in 2 NVLink cliques of 2 nodes (drc-0, drc-1 and
// drc-2, drc-3).
func draCliquePool() cluster.NodePool {
	return cluster.NodePool{Name: "drc", Count: 4, GPUsPerNode: 2, GPUModel: "H100-80GB", GPUMemoryMiB: 81920,
		CPU: "64", Memory: "512Gi", DRA: true, CliqueSize: 2}
}

// A partition's topology level may name a device attribute the DRA driver publishes (the
// NVLink clique): a gang that requires that level runs inside one clique, passing over
// the half-used one, and one larger than any clique waits.
func TestDRACliqueIsATopologyLevel(t *testing.T) {
	e := setup(t)
	e.create(&v1alpha1.Partition{ObjectMeta: metav1.ObjectMeta{Name: "drc"},
		Spec: v1alpha1.PartitionSpec{NodeSelector: map[string]string{v1alpha1.PartitionLabel: "drc"}, Topology: []string{cliqueLevel}}})
	e.run()
	e.queue("drc-q", "drc", 0)
	e.claimTemplate("two-gpus", claimSpec(cluster.DeviceClassGPU, 2))

	// drc-0 taken: clique 0 has one free node, clique 1 two.
	e.claim("first", claimSpec(cluster.DeviceClassGPU, 2))
	e.waitBound(e.draPodsIn("drc", nil, "first", "drc-q", 1, 1, "first", "", "drc-0"), waitLong)

	inClique := map[string]string{v1alpha1.TopologyRequiredAnnotation: cliqueLevel}
	pair := e.draPodsIn("drc", inClique, "pair", "drc-q", 2, 2, "", "two-gpus", "")
	nodes := e.waitBound(pair, waitLong)
	if !(nodes[0] == "drc-2" && nodes[1] == "drc-3" || nodes[0] == "drc-3" && nodes[1] == "drc-2") {
		t.Errorf("the gang requiring one clique runs on %v, want clique 1's drc-2 and drc-3", nodes)
	}
	e.draPodsIn("drc", inClique, "triple", "drc-q", 3, 3, "", "two-gpus", "")
	e.condition("triple", v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong)
}
