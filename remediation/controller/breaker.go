package controller

import (
	"fmt"
	"math"
	"time"
)

// nodeRecord is what the circuit breaker needs to know about one node.
type nodeRecord struct {
	Partition string
	// Out: the node is quarantined now.
	Out bool
	// QuarantinedAt is the node's latest quarantine start; zero if never.
	QuarantinedAt time.Time
}

// breakerAllows decides whether one more node of partition may be quarantined. It counts
// the partition's nodes that are out now or were taken out within the window: a wave of
// faults across many nodes at once is more likely a bad driver rollout, a fabric event or
// a bug here than that many broken GPUs, so past share of the partition the nodes stay in
// service and only their conditions report the fault.
func breakerAllows(nodes map[string]nodeRecord, partition string, now time.Time, share float64, window time.Duration) (bool, string) {
	total, out := 0, 0
	for _, n := range nodes {
		if n.Partition != partition {
			continue
		}
		total++
		if n.Out || (!n.QuarantinedAt.IsZero() && now.Sub(n.QuarantinedAt) < window) {
			out++
		}
	}
	limit := int(math.Floor(share * float64(total)))
	if out+1 > limit {
		return false, fmt.Sprintf("circuit breaker: %d of %d nodes in partition %q already quarantined within %s (limit %d, %.0f%%)",
			out, total, partition, window, limit, share*100)
	}
	return true, ""
}
