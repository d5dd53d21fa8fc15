package controller

import (
	"fmt"
	"math"
	"time"
)

// nodeRecord is what the circuit breaker needs to know about one node.
type nodeRecord struct {
	Partition string
	// Out: the node, or one of its GPUs, is out of service now.
	Out bool
	// QuarantinedAt is the latest time the node or one of its GPUs was taken out; zero if
	// never.
	QuarantinedAt time.Time
}

// breakerAllows decides whether one more of a partition's nodes may be taken out, whole or
// one GPU of it. It counts the partition's other nodes that are out now or were taken out
// within the window: a wave of faults across many nodes at once is more likely a bad driver
// rollout, a fabric event or a bug here than that many broken GPUs, so past share of the
// partition the nodes stay in service and only their conditions report the fault.
// The candidate itself is left out of the count (a node with a GPU already out may still be
// quarantined whole: it is one node either way).
func breakerAllows(nodes map[string]nodeRecord, candidate string, now time.Time, share float64, window time.Duration) (bool, string) {
	partition := nodes[candidate].Partition
	total, out := 0, 0
	for name, n := range nodes {
		if n.Partition != partition {
			continue
		}
		total++
		if name != candidate && (n.Out || (!n.QuarantinedAt.IsZero() && now.Sub(n.QuarantinedAt) < window)) {
			out++
		}
	}
	limit := int(math.Floor(share * float64(total)))
	if out+1 > limit {
		return false, fmt.Sprintf("circuit breaker: %d of %d nodes in partition %q already out of service within %s (limit %d, %.0f%%)",
			out, total, partition, window, limit, share*100)
	}
	return true, ""
}
