package scheduler

import (
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
)

// draOraclePools are two identical sets of DRA nodes, one H100 with MIG partitions and
// one A100 each: "ors-*" in partition dra-oracle-s for Sluice, "ork-*" (labelled
// dra-oracle-k) for kube-scheduler, so both decide the same claims on the same devices at
// once.
func draOraclePools() []cluster.NodePool {
	pool := func(name, part, model string, gpus, memMiB int, mig string) cluster.NodePool {
		return cluster.NodePool{Name: name, Count: 1, GPUsPerNode: gpus, GPUModel: model, GPUMemoryMiB: memMiB, CPU: "64", Memory: "512Gi",
			DRA: true, MIGMode: mig, Labels: map[string]string{v1alpha1.PartitionLabel: part}}
	}
	return []cluster.NodePool{
		pool("ors-h", "dra-oracle-s", "H100-80GB", 4, 81920, "mixed"), pool("ors-a", "dra-oracle-s", "A100-40GB", 2, 40960, ""),
		pool("ork-h", "dra-oracle-k", "H100-80GB", 4, 81920, "mixed"), pool("ork-a", "dra-oracle-k", "A100-40GB", 2, 40960, ""),
	}
}
