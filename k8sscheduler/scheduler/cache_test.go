package scheduler

import (
	"testing"

	"github.com/sluicehq/sluice/bridge"
)

// A pod seen bound where the scheduler had assumed it changes nothing a cycle would
// decide on, so it wakes none; any other pod change does, and the assumption is dropped
// either way.
func TestPodChangeWakesCycle(t *testing.T) {
	tests := []struct {
		name    string
		assumed string // node pod a's bind was assumed on, "" for none
		pod     string // the pod that changes
		node    string // the node it shows up on
		wake    bool
	}{
		{name: "another pending pod arrives", pod: "b", wake: true},
		{name: "bound where assumed", assumed: "n1", pod: "a", node: "n1", wake: false},
		{name: "bound elsewhere than assumed", assumed: "n1", pod: "a", node: "n2", wake: true},
		{name: "bound by someone else", pod: "a", node: "n1", wake: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache()
			c.setPod("ns/a", convertPod(testPod("a", "1", nil, ""), "sluice"))
			<-c.changed
			if tt.assumed != "" {
				c.groups["ns/pg"].assumed = map[string]bridge.Bind{"a": {Job: "ns/pg", Task: "a", Node: tt.assumed}}
			}
			c.setPod("ns/"+tt.pod, convertPod(testPod(tt.pod, "1", nil, tt.node), "sluice"))
			if woke := len(c.changed) == 1; woke != tt.wake {
				t.Errorf("cycle woken = %v, want %v", woke, tt.wake)
			}
			if _, still := c.groups["ns/pg"].assumed["a"]; still && tt.pod == "a" {
				t.Error("the assumed bind outlived the pod's binding")
			}
		})
	}
}
