package bridge

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// evictStaleGangs evicts every gang that has run below its minMember for longer than the
// grace period: its remaining tasks hold resources without doing useful work.
func (c *cycle) evictStaleGangs() {
	grace := c.s.Config.StaleGangGrace
	if grace <= 0 {
		grace = DefaultStaleGangGrace
	}
	var stale []int32
	for ji := range c.jobs {
		js := &c.jobs[ji]
		since := js.job.StaleSince
		if js.running > 0 && js.running < js.minMember && !since.IsZero() && c.s.Now.Sub(since) >= grace {
			stale = append(stale, int32(ji))
		}
	}
	slices.SortFunc(stale, func(a, b int32) int { return strings.Compare(c.jobs[a].job.ID, c.jobs[b].job.ID) })
	for _, ji := range stale {
		js := &c.jobs[ji]
		reason := fmt.Sprintf("gang has run with %d of the %d tasks it needs since %s, past its grace of %s",
			js.running, js.minMember, js.job.StaleSince.UTC().Format("15:04:05"), grace)
		for _, pi := range js.places {
			if c.places[pi].live {
				c.apply(pi, -1)
				c.emitEviction(pi, EvictStaleGang, "", reason)
			}
		}
		js.evicted = true
	}
}

// rescue gives every job still blocked for lack of capacity, in the order allocate
// considered them, four more chances: capacity that earlier evictions of this cycle left
// over, consolidation (moving preemptible jobs, which keep running), reclaim (from queues over
// their fair share) and preemption (inside its own queue, by priority).
func (c *cycle) rescue() {
	c.victims = make([][]victimQueue, len(c.parts))
	c.freedStamp = make([]int, len(c.nodes))
	c.freedSeen = map[string][]failure{}
	failed := map[string]bool{}
	for _, ji := range c.order {
		js := &c.jobs[ji]
		if js.code != ReasonResources || js.evicted {
			continue // an evicted job is requeued by the caller, not placed again now
		}
		// A failed rescue is not retried for the same queue and GPU ask in this cycle: with
		// thousands of pending jobs each try would walk every victim again.
		key := c.parts[js.part].name + "\x00" + c.queues[js.queue].name + "\x00" + c.gpuShape(js)
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

// victimQueue is one leaf queue's running preemptible jobs in eviction order: lowest
// priority, then youngest, first.
type victimQueue struct {
	queue int32
	jobs  []int32
}

// victimsOf lists partition p's running preemptible work by queue, the queue most over its
// fair share first. Reclaim walks only queues that may give, preempt only its own.
func (c *cycle) victimsOf(p int32) []victimQueue {
	if c.victims[p] != nil {
		return c.victims[p]
	}
	slot := map[int32]int{}
	vqs := []victimQueue{}
	for ji := range c.jobs {
		js := &c.jobs[ji]
		if js.part != p || js.queue < 0 || !js.preempt || js.evicted || js.running == 0 {
			continue
		}
		i, ok := slot[js.queue]
		if !ok {
			i = len(vqs)
			slot[js.queue] = i
			vqs = append(vqs, victimQueue{queue: js.queue})
		}
		vqs[i].jobs = append(vqs[i].jobs, int32(ji))
	}
	slices.SortFunc(vqs, func(a, b victimQueue) int {
		if ra, rb := c.qpart(a.queue, p).ratio, c.qpart(b.queue, p).ratio; ra != rb {
			return cmp.Compare(rb, ra)
		}
		return cmp.Compare(a.queue, b.queue)
	})
	for _, vq := range vqs {
		slices.SortFunc(vq.jobs, func(a, b int32) int {
			ja, jb := &c.jobs[a], &c.jobs[b]
			if ja.prio != jb.prio {
				return cmp.Compare(ja.prio, jb.prio)
			}
			if d := cmp.Compare(jb.start, ja.start); d != 0 {
				return d
			}
			return strings.Compare(ja.job.ID, jb.job.ID)
		})
	}
	c.victims[p] = vqs
	return vqs
}

// maxVictims bounds the jobs one attempt may evict before it gives up: a gang that needs
// more than this is better served by its reservation than by a mass eviction, and the bound
// keeps a failing attempt cheap.
const maxVictims = 64

// evictFor tries to fit job ji by evicting, in order, the jobs of the given victim queues
// that allowed says it may take. It commits and returns true when the gang fits, giving back
// any victim the gang turned out not to need.
func (c *cycle) evictFor(ji int32, action Action, kind EvictionKind, queues []victimQueue, allowed func(v int32) bool, reason func(v int32) string) bool {
	js := &c.jobs[ji]
	at := &c.scratch
	c.begin(at)
	for _, vq := range queues {
		for _, v := range vq.jobs {
			if c.jobs[v].evicted || v == ji || c.jobs[v].grew || !allowed(v) {
				continue
			}
			if len(at.victims) == maxVictims {
				c.rollback(at)
				return false
			}
			c.evictSim(at, v)
			if c.quickNoFit(js) {
				continue
			}
			if c.placeFreed(at, ji, v, action) {
				c.spareVictims(at)
				c.commitEvictions(at, ji, kind, reason)
				return true
			}
		}
	}
	c.rollback(at)
	return false
}

// placeFreed places job ji after victim v was taken away. A job of one task can newly fit
// only where v was (it fit nowhere before, and only v's nodes changed), so only those nodes
// are looked at; a larger gang is placed anew.
func (c *cycle) placeFreed(at *attempt, ji, v int32, action Action) bool {
	js := &c.jobs[ji]
	if js.pending != 1 || js.minMember-js.running != 1 {
		return c.placeGang(at, ji, action)
	}
	gi := js.g0
	for c.groups[gi].running >= c.groups[gi].count {
		gi++
	}
	for _, pi := range c.jobs[v].places {
		if n := c.places[pi].node; c.fits(at, ji, gi, n) {
			c.placeOn(ji, gi, n, action)
			return true
		}
	}
	return false
}

// spareVictims gives back every victim whose placements are still free after the gang was
// placed: it was evicted on the way but the gang did not need its resources.
func (c *cycle) spareVictims(at *attempt) {
	kept := at.victims[:0]
	for _, v := range at.victims {
		if c.stillFree(v) {
			js := &c.jobs[v]
			js.evicted = false
			for _, pi := range js.places {
				if !c.places[pi].live && !c.places[pi].fresh {
					c.apply(pi, +1)
				}
			}
			continue
		}
		kept = append(kept, v)
	}
	at.victims = kept
	un := at.unplaced[:0]
	for _, pi := range at.unplaced {
		if !c.places[pi].live {
			un = append(un, pi)
		}
	}
	at.unplaced = un
}

// stillFree reports whether every placement a victim lost could be applied again as it was.
func (c *cycle) stillFree(v int32) bool {
	var need [16]vec // per node of the victim, rarely more than a few
	var nodes [16]int32
	k := 0
	for _, pi := range c.jobs[v].places {
		pl := &c.places[pi]
		if pl.live || pl.fresh {
			continue
		}
		for _, r := range c.gpuRefs[pl.g0:pl.gn] {
			gp := &c.gpus[r]
			if pl.whole && !gp.entirelyFree() {
				return false
			}
			if !pl.whole && (gp.roomMilli() < pl.milli || gp.usedMem+pl.mem > gp.mem) {
				return false
			}
		}
		i := slices.Index(nodes[:k], pl.node)
		if i < 0 {
			if k == len(nodes) {
				return false
			}
			i, k = k, k+1
			nodes[i], need[i] = pl.node, vec{}
		}
		need[i].add(pl.use)
	}
	for i := range k {
		nd := &c.nodes[nodes[i]]
		if need[i][DimCPU] > nd.free[DimCPU] || need[i][DimMemory] > nd.free[DimMemory] {
			return false
		}
	}
	return true
}

func (c *cycle) commitEvictions(at *attempt, ji int32, kind EvictionKind, reason func(v int32) string) {
	forJob := c.jobs[ji].job.ID
	commitNo := len(c.d.Evictions) + 1 // unique per commit, for deduplicating nodes
	for _, pi := range at.unplaced {
		c.emitEviction(pi, kind, forJob, reason(c.places[pi].job))
		if n := c.places[pi].node; c.freedStamp[n] != commitNo {
			c.freedStamp[n] = commitNo
			c.freed = append(c.freed, n)
		}
	}
	for i := at.firstPlace; i < len(c.places); i++ {
		c.emitBind(int32(i), true)
	}
	c.jobs[ji].code, c.jobs[ji].reason = "", ""
	c.jobs[ji].grew = true
	at.unplaced = at.unplaced[:0]
	at.victims = at.victims[:0]
}

// reclaim lets a queue under its fair share take capacity back from queues over theirs. Only
// preemptible work is taken, and never so much that a victim's queue (or any of its
// ancestors below the common one) drops below its own fair share, nor so much that the
// reclaiming queue's path rises above its share: so no eviction can later be reversed.
func (c *cycle) reclaim(ji int32) bool {
	js := &c.jobs[ji]
	p := js.part
	dims := governingDims(js.need)
	if !c.withinShare(js.queue, p, js.need, dims) || !c.reclaimable(js, dims) {
		return false
	}
	var queues []victimQueue
	for _, vq := range c.victimsOf(p) {
		if vq.queue != js.queue && c.mayGive(js, vq.queue, vec{}, dims) {
			queues = append(queues, vq)
		}
	}
	allowed := func(v int32) bool { return c.mayGive(js, c.jobs[v].queue, c.jobs[v].use, dims) }
	qname := c.queues[js.queue].name
	reason := func(v int32) string {
		return fmt.Sprintf("queue %s is over its fair share in partition %s; queue %s reclaims it for job %s",
			c.queues[c.jobs[v].queue].name, c.parts[p].name, qname, js.job.ID)
	}
	return c.evictFor(ji, ActionReclaim, EvictReclaim, queues, allowed, reason)
}

// mayGive reports whether leaf queue vq may lose take to job js's queue: every queue on
// the victim's side below the common ancestor stays at or above its fair share (strictly
// above it when take is zero, to ask whether the queue may give anything), and every queue
// on the reclaimer's side stays within its share.
func (c *cycle) mayGive(js *jobState, vq int32, take vec, dims []Dim) bool {
	p := js.part
	pa, pb := c.queues[js.queue].path, c.queues[vq].path
	i := 0
	for i < len(pa) && i < len(pb) && pa[i] == pb[i] {
		i++
	}
	for _, q := range pa[i:] {
		if !c.withinShare(q, p, js.need, dims) {
			return false
		}
	}
	for _, q := range pb[i:] {
		qp := c.qpart(q, p)
		for _, d := range dims {
			if qp.alloc[d]-take[d] < qp.fair[d] || (take == (vec{}) && qp.alloc[d] <= qp.fair[d]) {
				return false
			}
		}
	}
	return true
}

// reclaimable reports whether free capacity plus everything leaf queues hold above their
// fair share could cover the job: when not, no reclaim can, and no victim is looked at.
func (c *cycle) reclaimable(js *jobState, dims []Dim) bool {
	avail := c.parts[js.part].free
	for _, vq := range c.victimsOf(js.part) {
		qp := c.qpart(vq.queue, js.part)
		for _, d := range dims {
			avail[d] += max(qp.alloc[d]-qp.fair[d], 0)
		}
	}
	for _, d := range dims {
		if js.need[d] > avail[d] {
			return false
		}
	}
	return true
}

// withinShare reports whether queue q stays within its fair share in partition p after
// taking need.
func (c *cycle) withinShare(q, p int32, need vec, dims []Dim) bool {
	qp := c.qpart(q, p)
	for _, d := range dims {
		if need[d] > 0 && qp.alloc[d]+need[d] > qp.fair[d] {
			return false
		}
	}
	return true
}

// preempt lets a job evict lower-priority preemptible jobs of its own queue.
func (c *cycle) preempt(ji int32) bool {
	js := &c.jobs[ji]
	vqs := c.victimsOf(js.part)
	i := slices.IndexFunc(vqs, func(vq victimQueue) bool { return vq.queue == js.queue })
	if i < 0 {
		return false
	}
	allowed := func(v int32) bool { return c.jobs[v].prio < js.prio }
	// Free capacity plus everything the lower-priority jobs hold must cover the job, or no
	// victim is worth looking at.
	avail := c.parts[js.part].free
	for _, v := range vqs[i].jobs {
		if vj := &c.jobs[v]; allowed(v) && !vj.evicted && !vj.grew {
			avail.add(vj.use)
		}
	}
	for _, d := range governingDims(js.need) {
		if js.need[d] > avail[d] {
			return false
		}
	}
	reason := func(v int32) string {
		return fmt.Sprintf("preempted by higher-priority job %s (priority %d over %d) in queue %s",
			js.job.ID, js.prio, c.jobs[v].prio, c.queues[js.queue].name)
	}
	return c.evictFor(ji, ActionPreempt, EvictPreempt, vqs[i:i+1], allowed, reason)
}

// gpuShape is a key equal for jobs that ask for the same GPUs in the same gang shape,
// whatever their CPU and memory.
func (c *cycle) gpuShape(js *jobState) string {
	b := make([]byte, 0, 32)
	for gi := js.g0; gi < js.gn; gi++ {
		g := &c.groups[gi]
		b = append(b, g.gpu.Kind...)
		for _, v := range [...]int64{int64(g.count - g.running), int64(g.gpu.Devices), int64(g.gpu.Milli), g.gpu.MemoryMiB} {
			b = append(b, ',')
			b = strconv.AppendInt(b, v, 10)
		}
		b = append(b, '|')
	}
	return string(b)
}
