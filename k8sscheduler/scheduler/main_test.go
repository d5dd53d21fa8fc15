package scheduler

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// rigSpec has one small pool per end-to-end test, so the tests share a rig without
// sharing nodes.
func rigSpec() cluster.Spec {
	pool := func(name string, count, gpus int) cluster.NodePool {
		return cluster.NodePool{Name: name, Count: count, GPUsPerNode: gpus, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "64", Memory: "512Gi"}
	}
	return cluster.Spec{NodePools: append([]cluster.NodePool{
		pool("gang", 4, 8), pool("frac", 1, 2), pool("rc", 1, 4), pool("bp", 2, 8), pool("sp", 2, 8), pool("cord", 2, 8), pool("slurm", 2, 8), pool("one", 1, 2), pool("idle", 2, 4), pool("access", 1, 1), pool("share", 1, 8), pool("rcf", 1, 2), pool("resv", 1, 8), draPool(), draCliquePool(), draReclaimPool(),
	}, append(append(placementPools(), alternativePools()...), draOraclePools()...)...)}
}

func TestMain(m *testing.M) { os.Exit(e2e.Main(m, rigSpec())) }
