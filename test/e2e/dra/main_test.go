// Package dra runs Dynamic Resource Allocation end to end on a real `sluice server`
// (issue 38): a rig whose GPU nodes publish their GPUs through the stand-in DRA driver
// (test/cluster/dra.go), a Kubernetes Job whose pods claim GPUs from a template, and a
// Slurm job asking --gres=gpu:2 on a partition whose GPUs come through DRA.
package dra

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// pool is the rig's one node pool, named for the example site's h100 partition (where
// queues nlp and vision have quotas), with its GPUs published through DRA.
var pool = cluster.NodePool{Name: "h100", Count: 2, GPUsPerNode: 4, GPUModel: "H100-80GB", GPUMemoryMiB: 81920,
	CPU: "128", Memory: "1Ti", DRA: true}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // the test's own controller-runtime client has nothing to log
	os.Exit(sluiceproc.Main(func() int { return e2e.Main(m, cluster.Spec{NodePools: []cluster.NodePool{pool}}) }))
}
