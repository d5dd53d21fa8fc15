package bridge

import (
	"strconv"
)

// placeRunning records a task that is already running, with its devices.
func (c *cycle) placeRunning(ji int32, rt *RunningTask) {
	js := &c.jobs[ji]
	gi := js.g0
	if rt.Group != "" {
		gi = -1
		for i := js.g0; i < js.gn; i++ {
			if c.groups[i].name == rt.Group {
				gi = i
			}
		}
	}
	n, ok := c.nodeIdx[rt.Node]
	if gi < 0 || gi >= js.gn {
		c.problem("job "+js.job.ID+" task "+rt.Name, "running in unknown group "+rt.Group+"; not counted")
		c.orphanRunning = append(c.orphanRunning, rt.Name)
		return
	}
	g := &c.groups[gi]
	if !ok {
		// It runs somewhere we cannot see: it counts for its gang but holds no capacity here.
		c.problem("job "+js.job.ID+" task "+rt.Name, "running on unknown node "+rt.Node+"; its resources are not counted")
		c.orphanRunning = append(c.orphanRunning, rt.Name)
		g.running++
		js.running++
		return
	}
	nd := &c.nodes[n]
	pl := placement{job: ji, group: gi, node: n, task: rt.Name, start: nanos(rt.Start), g0: int32(len(c.gpuRefs))}
	kind := g.gpu.Kind
	if g.malformed {
		kind = GPUNone // a malformed GPU ask takes no devices; the job is reported
	}
	if kind != GPUNone {
		for _, idx := range rt.GPUs {
			if pos := c.gpuPos(nd, idx); pos >= 0 {
				c.gpuRefs = append(c.gpuRefs, pos)
			} else {
				c.problem("job "+js.job.ID+" task "+rt.Name, "node "+rt.Node+" has no GPU "+strconv.Itoa(int(idx)))
			}
		}
	}
	listed := int32(len(c.gpuRefs)) > pl.g0
	c.unlisted = c.unlisted || (kind != GPUNone && !listed)
	switch kind {
	case GPUWhole:
		pl.whole, pl.milli = true, 1000
		if !listed {
			c.takeWhole(n, g.gpu.Devices)
		}
	case GPUFraction, GPUMemory, GPUMultiFraction:
		if !listed {
			pl.milli, pl.mem = c.takeShared(n, g, g.devices(), false)
		} else {
			pl.milli, pl.mem = runningShare(&c.gpus[c.gpuRefs[pl.g0]], g, rt)
		}
	}
	pi := c.addPlacement(pl)
	g.running++
	js.running++
	if js.start == 0 || (pl.start != 0 && pl.start < js.start) {
		js.start = pl.start
	}
	c.apply(pi, +1)
}

func runningShare(gp *gpuState, g *groupReq, rt *RunningTask) (int32, int64) {
	milli, mem := rt.GPUMilli, rt.GPUMemoryMiB
	if g.gpu.Kind == GPUMemory {
		if mem == 0 {
			mem = g.gpu.MemoryMiB
		}
		if milli == 0 && gp.mem > 0 {
			milli = int32((mem*1000 + gp.mem - 1) / gp.mem)
		}
		return milli, mem
	}
	if milli == 0 {
		milli = g.gpu.Milli
	}
	if mem == 0 {
		mem = gp.mem * int64(milli) / 1000
	}
	return milli, mem
}

func (c *cycle) gpuPos(nd *nodeState, index int32) int32 {
	if p := nd.g0 + index; index >= 0 && p < nd.gn && c.gpus[p].index == index {
		return p // devices are sorted by index and usually numbered from 0
	}
	for i := nd.g0; i < nd.gn; i++ {
		if c.gpus[i].index == index {
			return i
		}
	}
	return -1
}

// applyForeignGPUs counts device usage listed on nodes by tasks that belong to no job here.
func (c *cycle) applyForeignGPUs() {
	known := c.jobTasksTaken()
	if known == nil {
		return // nothing listed
	}
	for i := range c.s.Nodes {
		n := &c.s.Nodes[i]
		ni, ok := c.nodeIdx[n.Name]
		if !ok {
			continue
		}
		nd := &c.nodes[ni]
		changed := false
		for _, g := range n.GPUs {
			jobSharers := int32(-1) // the device's sharers among the snapshot's jobs
			for _, t := range g.Taken {
				pos := c.gpuPos(nd, g.Index)
				if known[t.Task] || pos < 0 {
					continue
				}
				gp := &c.gpus[pos]
				if jobSharers < 0 {
					jobSharers = gp.sharers
				}
				if t.Hold {
					// The sharers stand for their hold; with none left it is on its way out.
					gp.releasing = jobSharers == 0
					continue
				}
				if t.Milli >= 1000 {
					gp.whole = true
				} else {
					gp.milli += t.Milli
					gp.usedMem += t.MemoryMiB
					gp.sharers++
				}
				changed = true
			}
		}
		if changed {
			c.refreshNode(ni)
		}
	}
}

// jobTasksTaken returns every task named in a device's Taken list, true for those that are
// running tasks of the snapshot's jobs (their job's placement counts, not the entry); nil
// when no device lists any. It reads the running tasks' placements, one array, rather than
// every job's Running slice, and the few tasks that got none (orphanRunning).
func (c *cycle) jobTasksTaken() map[string]bool {
	var named map[string]bool
	for i := range c.s.Nodes {
		for _, g := range c.s.Nodes[i].GPUs {
			for _, t := range g.Taken {
				if named == nil {
					named = map[string]bool{}
				}
				named[t.Task] = false
			}
		}
	}
	if named == nil {
		return nil
	}
	for i := range c.places { // only running tasks are placed yet
		if _, ok := named[c.places[i].task]; ok {
			named[c.places[i].task] = true
		}
	}
	for _, task := range c.orphanRunning {
		if _, ok := named[task]; ok {
			named[task] = true
		}
	}
	return named
}
