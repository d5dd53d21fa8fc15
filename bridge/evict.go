package bridge

import (
	"fmt"
	"slices"
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
	if !c.jobsByID { // otherwise collected in id order already
		slices.SortStableFunc(stale, func(a, b int32) int { return strings.Compare(c.jobs[a].job.ID, c.jobs[b].job.ID) })
	}
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

// maxVictims bounds the jobs one attempt may evict before it gives up: a gang that needs
// more than this is better served by its reservation than by a mass eviction, and the bound
// keeps a failing attempt cheap.
const maxVictims = 64

// evictFor tries to fit job ji by evicting, in order, the jobs of the given victim queues
// that allowed says it may take. It commits and returns true when the gang fits, giving back
// any victim the gang turned out not to need.
func (c *cycle) evictFor(ji int32, action Action, kind EvictionKind, queues []*victimQueue, allowed func(v int32) bool, reason func(v int32) string) bool {
	js := &c.jobs[ji]
	if js.pending == 1 && js.minMember-js.running == 1 {
		return c.evictOnOneNode(ji, action, kind, queues, allowed, reason)
	}
	at := &c.scratch
	c.begin(at)
	scanned := 0
	for _, vq := range queues {
		for _, v := range c.inEvictionOrder(vq) {
			if scanned++; scanned > maxVictimScan {
				c.rollback(at)
				return false
			}
			if c.jobs[v].evicted || v == ji || c.jobs[v].grew || !allowed(v) {
				continue
			}
			if len(at.victims) == maxVictims {
				c.rollback(at)
				return false
			}
			c.evictSim(at, v)
			if !c.quickNoFit(js) && c.placeGang(at, ji, action) {
				c.spareVictims(at)
				c.commitEvictions(at, ji, kind, reason)
				return true
			}
		}
	}
	c.rollback(at)
	return false
}

// nodeVictim is a victim with a task on a node.
type nodeVictim struct{ node, job int32 }

// maxVictimNodes bounds how many nodes one attempt for a one-task job tries to empty, and
// maxVictimScan how many running jobs any attempt looks at.
const (
	maxVictimNodes = 8
	maxVictimScan  = 512
)

// evictOnOneNode fits a job of one task by evicting from a single node. Walking the victims
// in order, it sums per node what they hold there; as soon as a node would have enough, it
// evicts that node's victims, in order, until the task fits. Victims elsewhere are never
// touched, and nothing is simulated on nodes that cannot work.
func (c *cycle) evictOnOneNode(ji int32, action Action, kind EvictionKind, queues []*victimQueue, allowed func(v int32) bool, reason func(v int32) string) bool {
	js := &c.jobs[ji]
	gi := js.g0
	for c.groups[gi].running >= c.groups[gi].count {
		gi++
	}
	g := &c.groups[gi]
	need := c.taskNeed(g, js.part)
	if c.gain == nil {
		c.gain = make([]vec, len(c.nodes))
		c.gained = make([]bool, len(c.nodes))
	}
	pairs, touched := c.pairs[:0], c.touched[:0]
	defer func() {
		for _, n := range touched {
			c.gain[n], c.gained[n] = vec{}, false
		}
		c.pairs, c.touched = pairs, touched
	}()
	var tried [maxVictimNodes]int32
	ntried, scanned := 0, 0
	for _, vq := range queues {
		for k, v := range c.inEvictionOrder(vq) {
			if scanned++; scanned > maxVictimScan {
				return false
			}
			if vj := &c.jobs[v]; vj.evicted || v == ji || vj.grew || !allowed(v) {
				continue
			}
			// Neither evicted nor grown, it holds exactly what it held when its queue was
			// sorted: the copy in vq.held.
			from := len(pairs)
			for _, h := range vq.held[vq.heldAt[k]:vq.heldAt[k+1]] {
				if !c.gained[h.node] {
					c.gained[h.node] = true
					touched = append(touched, h.node)
				}
				c.gain[h.node].add(h.use)
				pairs = append(pairs, nodeVictim{h.node, v})
			}
			for _, p := range pairs[from:] {
				n := p.node
				nd := &c.nodes[n]
				avail := nd.free
				avail.add(c.gain[n])
				if slices.Contains(tried[:ntried], n) || !need.fitsIn(avail) || !c.couldEverHold(n, ji, gi) ||
					(nd.reservedBy >= 0 && nd.reservedBy != ji && !c.mayBackfill(js, nd)) ||
					((len(nd.resv) > 0 || js.resv != 0) && c.resvBlocks(nil, ji, n)) {
					continue
				}
				if ntried == maxVictimNodes {
					return false
				}
				tried[ntried] = n
				ntried++
				if c.emptyNodeFor(ji, gi, n, pairs, action, kind, allowed, reason) {
					return true
				}
			}
		}
	}
	return false
}

// emptyNodeFor evicts, in order, the victims listed on node n until one task of group gi
// fits there, then commits; otherwise it rolls back.
func (c *cycle) emptyNodeFor(ji, gi, n int32, pairs []nodeVictim, action Action, kind EvictionKind, allowed func(v int32) bool, reason func(v int32) string) bool {
	at := &c.scratch
	c.begin(at)
	for _, p := range pairs {
		if p.node != n || c.jobs[p.job].evicted || !allowed(p.job) {
			continue
		}
		c.evictSim(at, p.job)
		if c.fits(at, ji, gi, n) {
			c.placeOn(ji, gi, n, action)
			c.spareVictims(at)
			c.commitEvictions(at, ji, kind, reason)
			return true
		}
	}
	c.rollback(at)
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

// stillFree reports whether every placement a victim lost could be applied again as it was,
// exclusive nodes included (the victim's, or the new job's).
func (c *cycle) stillFree(v int32) bool {
	var need [16]vec // per node of the victim, rarely more than a few
	var nodes [16]int32
	k := 0
	for _, pi := range c.jobs[v].places {
		pl := &c.places[pi]
		if pl.live || pl.fresh {
			continue
		}
		if nd := &c.nodes[pl.node]; (nd.exclusive >= 0 && nd.exclusive != v) || (c.jobs[v].exclusive && nd.tasks > 0) {
			return false
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
	c.leaveVictims(at, ji)
	at.unplaced = at.unplaced[:0]
	at.victims = at.victims[:0]
}
