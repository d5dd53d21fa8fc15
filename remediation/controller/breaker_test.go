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
	tests := []struct {
		name  string
		nodes map[string]nodeRecord
		share float64
		want  bool
	}{
		{"first of four", map[string]nodeRecord{"a": {Partition: "h100"}, "b": {Partition: "h100"}, "c": {Partition: "h100"}, "d": {Partition: "h100"}}, 0.5, true},
		{"second of four reaches half", map[string]nodeRecord{"a": {Partition: "h100", Out: true, QuarantinedAt: recently}, "b": {Partition: "h100"}, "c": {Partition: "h100"}, "d": {Partition: "h100"}}, 0.5, true},
		{"third of four is past half", map[string]nodeRecord{"a": {Partition: "h100", Out: true, QuarantinedAt: recently}, "b": {Partition: "h100", QuarantinedAt: recently}, "c": {Partition: "h100"}, "d": {Partition: "h100"}}, 0.5, false},
		{"returned within the window still counts", map[string]nodeRecord{"a": {Partition: "p", QuarantinedAt: recently}, "b": {Partition: "p"}}, 0.5, false},
		{"old quarantines have left the window", map[string]nodeRecord{"a": {Partition: "p", QuarantinedAt: longAgo}, "b": {Partition: "p"}}, 0.5, true},
		{"a node still out counts however old", map[string]nodeRecord{"a": {Partition: "p", Out: true, QuarantinedAt: longAgo}, "b": {Partition: "p"}}, 0.5, false},
		{"other partitions do not count", map[string]nodeRecord{"x": {Partition: "a100", Out: true}, "y": {Partition: "a100", Out: true}, "a": {Partition: "h100"}, "b": {Partition: "h100"}}, 0.5, true},
		{"a single-node partition is never emptied at 50%", map[string]nodeRecord{"a": {Partition: "solo"}}, 0.5, false},
		{"share 1 allows all", map[string]nodeRecord{"a": {Partition: "solo"}}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			partition := tt.nodes["a"].Partition
			got, why := breakerAllows(tt.nodes, partition, now, tt.share, window)
			if got != tt.want {
				t.Fatalf("breakerAllows = %v (%s), want %v", got, why, tt.want)
			}
			if !got && !strings.Contains(why, "circuit breaker") {
				t.Errorf("a held quarantine must say why: %q", why)
			}
		})
	}
}
