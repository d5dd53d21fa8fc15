// Package reservations runs advance reservations end to end on a real `sluice server`:
// issue 39's "done when" for a Kubernetes Job, and what admission refuses. Its rig has
// one 8-GPU node, which its test owns: a reservation holds the whole node, so nothing
// else may share it.
package reservations

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// pool is the rig's one node pool, named for the example site's h100 partition, where
// queue nlp has its quota.
var pool = cluster.NodePool{Name: "h100", Count: 1, GPUsPerNode: 8, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "128", Memory: "1Ti"}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // the test's own controller-runtime client has nothing to log
	os.Exit(sluiceproc.Main(func() int { return e2e.Main(m, cluster.Spec{NodePools: []cluster.NodePool{pool}}) }))
}
