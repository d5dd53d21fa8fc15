package slurmapi

import (
	"slices"
	"strings"
)

// maxPartitions bounds a job's partition list.
const maxPartitions = 16

// partitionList reads -p / partition: one name or a comma-separated list, in order of
// preference, each named once.
func partitionList(s string) ([]string, *Error) {
	list := strings.Split(s, ",")
	if len(list) > maxPartitions {
		return nil, BadRequest(ErrInvalidPartition, "job.partition", "partition list %q names more than %d partitions", s, maxPartitions)
	}
	for i, p := range list {
		list[i] = strings.TrimSpace(p)
		switch {
		case list[i] == "":
			return nil, BadRequest(ErrInvalidPartition, "job.partition", "partition list %q has an empty name", s)
		case slices.Contains(list[:i], list[i]):
			return nil, BadRequest(ErrInvalidPartition, "job.partition", "partition list %q names %s twice", s, list[i])
		}
	}
	return list, nil
}

// resolveList resolves a job that lists several partitions (-p a,b): it runs in the first
// listed where it can start. Every listed partition must take the job as it is stored
// (Slurm's EnforcePartLimits=ALL): the user, account and QOS allowed there, its time limit
// within the partition's, and the same node count (a --gpus job spread by the largest
// node could differ). The time limit a partition gives by default is the first one's; an
// image the job does not name comes from the partition it starts in.
func (c *Catalog) resolveList(d *JobDesc, list []string) *Error {
	first := *d
	first.Partition = list[0]
	if e := c.resolveIn(&first); e != nil {
		return e
	}
	for _, name := range list[1:] {
		other := *d
		other.Partition, other.TimeLimit = name, first.TimeLimit
		if e := c.resolveIn(&other); e != nil {
			return e
		}
		if other.Nodes != first.Nodes || other.Tasks != first.Tasks {
			return BadRequest(ErrInvalidPartition, "job.partition", "partitions %s and %s give the job different sizes (%d and %d nodes): list partitions whose nodes are alike, or give the node count (-N)",
				list[0], name, first.Nodes, other.Nodes)
		}
	}
	if d.ContainerImage == "" {
		first.ContainerImage = ""
	}
	first.Partition = strings.Join(list, ",")
	*d = first
	return nil
}

// Partitions lists the job's partitions, in order of preference (-p a,b).
func (d *JobDesc) Partitions() []string {
	if d.Partition == "" {
		return nil
	}
	return strings.Split(d.Partition, ",")
}
