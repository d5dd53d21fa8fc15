package bridge

import (
	"slices"
	"strconv"
)

// rescue gives every job still blocked for lack of capacity, in the order allocate
// considered them, four more chances: capacity that earlier evictions of this cycle left
// over, consolidation (moving preemptible jobs, which keep running), reclaim (from queues over
// their fair share) and preemption (inside its own queue, by priority).
func (c *cycle) rescue() {
	c.victims = make([][]victimQueue, len(c.parts))
	c.holds, c.holdsAt, c.belows = c.buf.holds[:0], c.buf.holdsAt[:0], c.buf.belows[:0]
	c.freedStamp = make([]int, len(c.nodes))
	c.freedSeen = map[int32][]failure{}
	failed := map[rescueKey]bool{}
	for _, ji := range c.order {
		js := &c.jobs[ji]
		if js.alts != nil {
			if js.code != "" && !js.grew && !js.evicted {
				c.rescueAlternatives(ji, failed) // alternatives.go
			}
			continue
		}
		if js.code != ReasonResources || js.evicted {
			continue // an evicted job is requeued by the caller, not placed again now
		}
		// A failed rescue is not retried for the same queue and GPU ask in this cycle: with
		// thousands of pending jobs each try would walk every victim again.
		key := rescueKey{js.part, js.queue, c.gpuShape(js)}
		if failed[key] {
			continue
		}
		// Limits are checked again: work placed since allocate looked may have used them up.
		if code, reason := c.admit(js); code != "" {
			js.code, js.reason = code, reason
			continue
		}
		if !c.placeOnFreed(ji) && !c.consolidate(ji) && !c.reclaim(ji) && !c.preempt(ji) {
			failed[key] = true
		}
	}
}

// rescueKey names the partition, queue and GPU ask (interned gpuShape) of a rescue.
type rescueKey struct{ part, queue, gpu int32 }

// freedScan is how many of the latest freed entries a job looks at.
const freedScan = 64

// placeOnFreed places a job on capacity that earlier evictions of this cycle left over, if
// it fits there: nothing needs to be evicted for it.
func (c *cycle) placeOnFreed(ji int32) bool {
	if len(c.freed) == 0 {
		return false
	}
	js := &c.jobs[ji]
	at := &c.scratch
	c.begin(at)
	if js.pending == 1 && js.minMember-js.running == 1 {
		gi := js.g0
		for c.groups[gi].running >= c.groups[gi].count {
			gi++
		}
		base := c.groups[gi].base
		from := 0
		seen := c.freedSeen[js.shape]
		for _, f := range seen {
			if f.cpu <= base[DimCPU] && f.mem <= base[DimMemory] {
				from = max(from, f.upTo)
			}
		}
		// Only the most recent entries: older freed capacity has mostly been taken.
		for _, n := range c.freed[max(from, len(c.freed)-freedScan):] {
			if c.nodes[n].part == js.part && c.fits(at, ji, gi, n) {
				c.placeOn(ji, gi, n, ActionAllocate)
				c.commit(at, ji, "", "")
				return true
			}
		}
		seen = slices.DeleteFunc(seen, func(f failure) bool { return f.cpu >= base[DimCPU] && f.mem >= base[DimMemory] })
		c.freedSeen[js.shape] = append(seen, failure{cpu: base[DimCPU], mem: base[DimMemory], upTo: len(c.freed)})
		return false
	}
	if c.quickNoFit(js) || !c.placeGang(at, ji, ActionAllocate) {
		return false
	}
	c.commit(at, ji, "", "")
	return true
}

// gpuShape is a key equal for jobs that ask for the same GPUs in the same gang shape,
// whatever their CPU and memory.
func (c *cycle) gpuShape(js *jobState) int32 {
	b := c.keyBuf[:0]
	for gi := js.g0; gi < js.gn; gi++ {
		g := &c.groups[gi]
		b = append(b, g.gpu.Kind...)
		for _, v := range [...]int64{int64(g.count - g.running), int64(g.gpu.Devices), int64(g.gpu.Milli), g.gpu.MemoryMiB} {
			b = append(b, ',')
			b = strconv.AppendInt(b, v, 10)
		}
		b = append(b, '|')
	}
	b = c.appendPlacementKey(b, js)
	c.keyBuf = b
	return c.intern(b)
}
