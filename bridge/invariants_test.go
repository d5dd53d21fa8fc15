package bridge

import (
	"fmt"
	"slices"
	"testing"
)

// applyDecisions returns the snapshot the next cycle would see if the caller carried out d:
// evicted tasks gone, bound tasks running, the clock a minute on.
func applyDecisions(s *Snapshot, d *Decisions) *Snapshot {
	next := *s
	next.Now = s.Now.Add(60e9)
	next.Jobs = slices.Clone(s.Jobs)
	idx := map[string]int{}
	for i := range next.Jobs {
		idx[next.Jobs[i].ID] = i
	}
	gone := map[string]bool{}
	for _, e := range d.Evictions {
		gone[e.Job+"/"+e.Task] = true
	}
	// A job that changes gets a new Running slice, as Snapshot's contract asks; the others
	// keep theirs, so a reused Scheduler takes their running tasks over.
	for i := range next.Jobs {
		j := &next.Jobs[i]
		if slices.ContainsFunc(j.Running, func(r RunningTask) bool { return gone[j.ID+"/"+r.Name] }) {
			j.Running = slices.DeleteFunc(slices.Clone(j.Running), func(r RunningTask) bool { return gone[j.ID+"/"+r.Name] })
		}
	}
	cloned := map[string]bool{}
	for _, b := range d.Binds {
		j := &next.Jobs[idx[b.Job]]
		if !cloned[b.Job] {
			j.Running = slices.Clip(slices.Clone(j.Running))
			cloned[b.Job] = true
		}
		rt := RunningTask{Name: b.Task, Group: b.Group, Node: b.Node, Start: s.Now}
		for _, g := range b.GPUs {
			rt.GPUs = append(rt.GPUs, g.Index)
		}
		if b.GPUMilli < 1000 {
			rt.GPUMilli, rt.GPUMemoryMiB = b.GPUMilli, b.GPUMemoryMiB
		}
		j.Running = append(j.Running, rt)
	}
	return &next
}

// checkInvariants verifies what must hold after any cycle: no device or node over-committed,
// whole and shared work never on one device, nothing on unhealthy devices or unschedulable
// nodes, no partial gang, and a reason for every job left waiting.
func checkInvariants(t *testing.T, s *Snapshot, d *Decisions) {
	t.Helper()
	nodes := map[string]*Node{}
	for i := range s.Nodes {
		nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	for _, b := range d.Binds {
		n := nodes[b.Node]
		if n == nil || n.Unschedulable {
			t.Errorf("bind of %s on missing or unschedulable node %s", b.Task, b.Node)
			continue
		}
		for _, g := range b.GPUs {
			gpu := findGPU(n, g.Index)
			if gpu == nil || gpu.Unhealthy {
				t.Errorf("bind of %s on missing or unhealthy GPU %d of %s", b.Task, g.Index, b.Node)
			} else if gpu.MIG && b.GPUMilli < 1000 {
				t.Errorf("fraction of %s on MIG GPU %d of %s", b.Task, g.Index, b.Node)
			}
		}
	}
	next := applyDecisions(s, d)
	checkCapacity(t, next)
	checkPlacementRules(t, s, next, d)
	bound := map[string]bool{}
	for _, b := range d.Binds {
		bound[b.Job] = true
	}
	pending := map[string]Pending{}
	for _, p := range d.Pending {
		pending[p.Job] = p
		if p.Code == "" || p.Reason == "" {
			t.Errorf("job %s pending without code or reason: %+v", p.Job, p)
		}
	}
	for _, j := range next.Jobs {
		total := int32(0)
		for _, g := range j.Groups {
			total += g.Count
		}
		need := j.MinMember
		if need <= 0 || need > total {
			need = total
		}
		if bound[j.ID] && int32(len(j.Running)) < need {
			t.Errorf("partial gang: job %s runs %d tasks, needs %d", j.ID, len(j.Running), need)
		}
		_, isPending := pending[j.ID]
		if bound[j.ID] && isPending {
			t.Errorf("job %s both bound and pending", j.ID)
		}
		if len(j.Running) == 0 && !isPending && !evictedJob(d, j.ID) {
			t.Errorf("job %s neither runs nor has a pending reason", j.ID)
		}
	}
}

func evictedJob(d *Decisions, id string) bool {
	return slices.ContainsFunc(d.Evictions, func(e Eviction) bool { return e.Job == id })
}

func findGPU(n *Node, index int32) *GPU {
	for i := range n.GPUs {
		if n.GPUs[i].Index == index {
			return &n.GPUs[i]
		}
	}
	return nil
}

// checkCapacity recounts every running task of a snapshot against its node and devices.
func checkCapacity(t *testing.T, s *Snapshot) {
	t.Helper()
	type gpuUse struct {
		milli, mem  int64
		whole, part int
	}
	cpu, mem := map[string]int64{}, map[string]int64{}
	gpus := map[string]*gpuUse{}
	for _, j := range s.Jobs {
		for _, r := range j.Running {
			g := j.Groups[0]
			for _, x := range j.Groups {
				if x.Name == r.Group {
					g = x
				}
			}
			cpu[r.Node] += g.Request.CPUMilli
			mem[r.Node] += g.Request.MemoryBytes
			for _, idx := range r.GPUs {
				key := fmt.Sprintf("%s/%d", r.Node, idx)
				u := gpus[key]
				if u == nil {
					u = &gpuUse{}
					gpus[key] = u
				}
				if g.GPU.Kind == GPUWhole {
					u.whole++
					u.milli += 1000
					continue
				}
				u.part++
				u.milli += int64(r.GPUMilli)
				u.mem += r.GPUMemoryMiB
			}
		}
	}
	for _, n := range s.Nodes {
		if cpu[n.Name] > n.Allocatable.CPUMilli || mem[n.Name] > n.Allocatable.MemoryBytes {
			t.Errorf("node %s over-committed: cpu %d/%d memory %d/%d", n.Name, cpu[n.Name], n.Allocatable.CPUMilli, mem[n.Name], n.Allocatable.MemoryBytes)
		}
		for _, g := range n.GPUs {
			u := gpus[fmt.Sprintf("%s/%d", n.Name, g.Index)]
			if u == nil {
				continue
			}
			if u.whole > 1 || (u.whole == 1 && u.part > 0) || u.milli > 1000 || u.mem > g.MemoryMiB {
				t.Errorf("GPU %d of %s over-committed: %+v (memory %d MiB)", g.Index, n.Name, *u, g.MemoryMiB)
			}
		}
	}
}
