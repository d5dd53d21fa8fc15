package slurmapi

// NodeDemand is what each of a job's nodes must give it: one pod's CPUs,
// memory and whole GPUs. Validation checks it against the partition's
// nodes and the Kubernetes backend sizes the job's pods from it, so both
// read the same numbers.
type NodeDemand struct {
	CPUs      int64
	MemoryMiB int64 // 0: no memory asked for
	GPUs      int64 // whole GPUs; a shared GPU (GPUs.Fraction) counts 0
}

// TasksPerNodeOrSpread is the tasks each node runs: as asked, or spread evenly
// (rounded up, as Slurm's block distribution fills nodes).
func (d *JobDesc) TasksPerNodeOrSpread() int {
	if d.TasksPerNode > 0 {
		return d.TasksPerNode
	}
	return (d.Tasks + d.Nodes - 1) / d.Nodes
}

// PerNode is the job's demand on each node. Counts are bounded at
// decoding (maxCount), so the products fit in int64.
func (d *JobDesc) PerNode() NodeDemand {
	tasks := int64(d.TasksPerNodeOrSpread())
	n := NodeDemand{CPUs: tasks * int64(d.CPUsPerTask)}
	g := d.GPUs
	switch {
	case g.PerNode > 0:
		n.GPUs = int64(g.PerNode)
	case g.PerTask > 0:
		n.GPUs = int64(g.PerTask) * tasks
	case g.PerJob > 0:
		n.GPUs = int64((g.PerJob + d.Nodes - 1) / d.Nodes)
	}
	switch {
	case d.MemoryPerNode > 0:
		n.MemoryMiB = d.MemoryPerNode
	case d.MemoryPerCPU > 0:
		n.MemoryMiB = d.MemoryPerCPU * n.CPUs
	case d.MemoryPerGPU > 0:
		n.MemoryMiB = d.MemoryPerGPU * max(n.GPUs, 1)
	}
	return n
}
