package slurmapi

import "fmt"

// NodeSize is one shape of node in a partition (allocatable CPUs, memory
// and GPUs) and how many of the partition's nodes have it.
type NodeSize struct {
	CPUs      int64
	MemoryMiB int64
	GPUs      int64
	Count     int
}

// fits reports whether a node of this size can hold one node of a job.
func (s NodeSize) fits(n NodeDemand, sharedGPU bool) bool {
	return n.CPUs <= s.CPUs && n.MemoryMiB <= s.MemoryMiB && n.GPUs <= s.GPUs && (!sharedGPU || s.GPUs > 0)
}

// checkNodes refuses a job no set of the partition's nodes could ever
// run, as slurmctld does at submission: more nodes than the partition
// has, or per-node CPUs, memory or GPUs that too few of its nodes offer.
// A catalogue that does not know the partition's nodes skips the check.
func (p *Partition) checkNodes(d *JobDesc) *Error {
	if !p.NodesKnown {
		return nil
	}
	if d.Nodes > p.NodeCount {
		return BadRequest(ErrInvalidNodeCount, "job.minimum_nodes", "partition %q has %d nodes, the job asks for %d", p.Name, p.NodeCount, d.Nodes)
	}
	need := d.PerNode()
	shared := d.GPUs.Fraction > 0
	fit := 0
	var largest NodeSize
	for _, s := range p.NodeSizes {
		if s.fits(need, shared) {
			fit += s.Count
		}
		largest.CPUs, largest.MemoryMiB, largest.GPUs = max(largest.CPUs, s.CPUs), max(largest.MemoryMiB, s.MemoryMiB), max(largest.GPUs, s.GPUs)
	}
	if fit >= d.Nodes {
		return nil
	}
	source, what := "job", fmt.Sprintf("only %d of partition %q's nodes offer %s per node, the job asks for %d such nodes", fit, p.Name, need, d.Nodes)
	switch {
	case need.CPUs > largest.CPUs:
		source, what = "job.cpus_per_task", fmt.Sprintf("the job asks for %d CPUs per node, partition %q's largest node has %d", need.CPUs, p.Name, largest.CPUs)
	case need.MemoryMiB > largest.MemoryMiB:
		source, what = "job.memory_per_node", fmt.Sprintf("the job asks for %d MiB per node, partition %q's largest node has %d", need.MemoryMiB, p.Name, largest.MemoryMiB)
	case need.GPUs > largest.GPUs || (shared && largest.GPUs == 0):
		source, what = "job.tres_per_node", fmt.Sprintf("the job asks for %d GPUs per node, partition %q's largest node has %d", max(need.GPUs, 1), p.Name, largest.GPUs)
	}
	return nodeConfigUnavailable(source, "%s", what)
}

func (n NodeDemand) String() string {
	return fmt.Sprintf("%d CPUs, %d MiB and %d GPUs", n.CPUs, n.MemoryMiB, n.GPUs)
}
