package controller

import (
	"strings"
	"testing"
	"time"
)

func TestBreakerAllows(t *testing.T) {
	now := time.Unix(1700000000, 0)
	window := 5 * time.Minute
	recently, longAgo := now.Add(-time.Minute), now.Add(-time.Hour)
	in := func(p string) nodeRecord { return nodeRecord{Partition: p} }
	outNow := func(p string, at time.Time) nodeRecord { return nodeRecord{Partition: p, Out: true, QuarantinedAt: at} }
	tests := []struct {
		name  string
		nodes map[string]nodeRecord // the candidate is "c"
		share float64
		want  bool
	}{
		{"first of four", map[string]nodeRecord{"a": in("h100"), "b": in("h100"), "c": in("h100"), "d": in("h100")}, 0.5, true},
		{"second of four reaches half", map[string]nodeRecord{"a": outNow("h100", recently), "b": in("h100"), "c": in("h100"), "d": in("h100")}, 0.5, true},
		{"third of four is past half", map[string]nodeRecord{"a": outNow("h100", recently), "b": {Partition: "h100", QuarantinedAt: recently}, "c": in("h100"), "d": in("h100")}, 0.5, false},
		{"a node with one GPU out counts as out", map[string]nodeRecord{"a": outNow("p", recently), "c": in("p")}, 0.5, false},
		{"the candidate's own GPU repair does not count against it", map[string]nodeRecord{"a": in("p"), "b": in("p"), "c": outNow("p", recently), "d": in("p")}, 0.5, true},
		{"returned within the window still counts", map[string]nodeRecord{"a": {Partition: "p", QuarantinedAt: recently}, "c": in("p")}, 0.5, false},
		{"old quarantines have left the window", map[string]nodeRecord{"a": {Partition: "p", QuarantinedAt: longAgo}, "c": in("p")}, 0.5, true},
		{"a node still out counts however old", map[string]nodeRecord{"a": outNow("p", longAgo), "c": in("p")}, 0.5, false},
		{"other partitions do not count", map[string]nodeRecord{"x": outNow("a100", recently), "y": outNow("a100", recently), "a": in("h100"), "c": in("h100")}, 0.5, true},
		{"a single-node partition is never emptied at 50%", map[string]nodeRecord{"c": in("solo")}, 0.5, false},
		{"share 1 allows all", map[string]nodeRecord{"c": in("solo")}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := breakerAllows(tt.nodes, "c", now, tt.share, window)
			if got != tt.want {
				t.Fatalf("breakerAllows = %v (%s), want %v", got, why, tt.want)
			}
			if !got && !strings.Contains(why, "circuit breaker") {
				t.Errorf("a held quarantine must say why: %q", why)
			}
		})
	}
}
