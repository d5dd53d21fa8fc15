package bridge

import (
	"fmt"
	"testing"
)

// A one-per-node job larger than perNodeAfter keeps to one task per node through the
// per-node count, whether its tasks are placed this cycle or run already; one that needs
// more nodes than there are waits with BadConstraints.
func TestOnePerNodeLargeJob(t *testing.T) {
	s := &Snapshot{Partitions: []Partition{{Name: "gpu", Placement: Binpack}},
		Queues: []Queue{{Name: "q"}}}
	for i := range 50 {
		s.Nodes = append(s.Nodes, Node{Name: fmt.Sprintf("n-%02d", i), Partition: "gpu",
			Allocatable: Resources{CPUMilli: 64000, MemoryBytes: 1 << 40, GPUMilli: 8000, GPUMemoryMiB: 8 * 81920}})
	}
	one := Placement{OnePerNode: true}
	grown := Job{ID: "grown", Queue: "q", Partition: "gpu", Preemptible: true, Placement: one,
		Groups: []TaskGroup{{Name: "main", Count: 30, GPU: GPURequest{Kind: GPUWhole, Devices: 1}}}}
	for i := range 20 { // 20 running, 10 to place
		grown.Running = append(grown.Running, RunningTask{Name: fmt.Sprintf("grown-%d", i), Node: fmt.Sprintf("n-%02d", i), GPUs: []int32{0}})
	}
	s.Jobs = []Job{grown,
		{ID: "wide", Queue: "q", Partition: "gpu", Preemptible: true, Placement: one, Groups: []TaskGroup{{Name: "main", Count: 40, GPU: GPURequest{Kind: GPUWhole, Devices: 1}}}},
		{ID: "too-wide", Queue: "q", Partition: "gpu", Preemptible: true, Placement: one, Groups: []TaskGroup{{Name: "main", Count: 60, GPU: GPURequest{Kind: GPUWhole, Devices: 1}}}},
	}
	d := Schedule(s)
	nodes := map[string]map[string]bool{}
	for _, b := range d.Binds {
		if nodes[b.Job] == nil {
			nodes[b.Job] = map[string]bool{}
		}
		if nodes[b.Job][b.Node] {
			t.Errorf("job %s bound twice on %s", b.Job, b.Node)
		}
		nodes[b.Job][b.Node] = true
	}
	for i := range 20 {
		if nodes["grown"][fmt.Sprintf("n-%02d", i)] {
			t.Errorf("grown got a second task on n-%02d, where one runs", i)
		}
	}
	if len(nodes["grown"]) != 10 || len(nodes["wide"]) != 40 {
		t.Errorf("grown on %d new nodes, wide on %d; want 10 and 40", len(nodes["grown"]), len(nodes["wide"]))
	}
	if len(d.Pending) != 1 || d.Pending[0].Job != "too-wide" || d.Pending[0].Code != ReasonBadConstraints {
		t.Errorf("pending %+v, want too-wide with BadConstraints", d.Pending)
	}
}
