package v1alpha1

// A node's partition, one reading for every component: the scheduler places the node by
// it, and reservations count, choose and show their partitions' nodes by it.

// SelectsNode reports whether a Partition's nodeSelector takes a node with these labels:
// every pair matches. An empty selector takes no node (the node's sluice.dev/partition
// label places it instead).
func SelectsNode(selector, nodeLabels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if nodeLabels[k] != v {
			return false
		}
	}
	return true
}

// NodePartition is the partition a node is in: of the Partitions whose nodeSelector takes
// it, the first by name; when none does, its sluice.dev/partition label ("" without one).
// A node is in one partition, so no node counts twice.
func NodePartition(nodeLabels map[string]string, parts map[string]*Partition) string {
	best := ""
	for name, p := range parts {
		if (best == "" || name < best) && SelectsNode(p.Spec.NodeSelector, nodeLabels) {
			best = name
		}
	}
	if best != "" {
		return best
	}
	return nodeLabels[PartitionLabel]
}
