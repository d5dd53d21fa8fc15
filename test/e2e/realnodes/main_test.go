// Package realnodes runs Slurm jobs on the rig's real nodes: three kubelets with
// containerd and runc on this machine (test/cluster/realnode.go), so what happens
// after Sluice binds a pod really happens: the launcher init container, the job
// container's `sluice launch`, srun between two pods over the pod network and
// cluster DNS, the termination message the recorder reads steps from, device IDs
// from a device plugin through the kubelet's device manager, a claim Sluice allocated
// prepared by a DRA kubelet plugin, the job's uid, signals at a time limit and a
// cancel, and the container's log. The kwok suites prove
// scheduling; this one proves execution.
package realnodes

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// spec is two real nodes with two stand-in GPUs each from the device plugin, partition
// "real", and one whose two GPUs come through DRA (a DRA kubelet plugin), partition
// "realdra".
var spec = cluster.Spec{NodePools: []cluster.NodePool{
	{Name: "real", Count: 2, GPUsPerNode: 2, GPUModel: "Rig-GPU", GPUMemoryMiB: 16384, Real: true},
	{Name: "realdra", Count: 1, GPUsPerNode: 2, GPUModel: "Rig-GPU", GPUMemoryMiB: 16384, Real: true, DRA: true},
}}

func TestMain(m *testing.M) {
	os.Exit(sluiceproc.Main(func() int { return e2e.Main(m, spec) }))
}
