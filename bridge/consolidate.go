package bridge

import "fmt"

// consolidate moves preemptible jobs to other nodes when the partition has room for a
// whole-GPU gang in total but too fragmented: it empties the node closest to fitting, places
// the gang, then places every moved job again elsewhere. It commits only if all of that
// succeeds. Fractions and CPU-only work pack well by themselves and never ask for it.
func (c *cycle) consolidate(ji int32) bool {
	js := &c.jobs[ji]
	for gi := js.g0; gi < js.gn; gi++ {
		if c.groups[gi].gpu.Kind != GPUWhole {
			return false
		}
	}
	ps := &c.parts[js.part]
	budget := c.s.Config.MaxConsolidations
	if budget <= 0 {
		budget = DefaultMaxConsolidations
	}
	if ps.consolidations >= budget || c.quickNoFit(js) {
		return false
	}
	ps.consolidations++
	moves := c.s.Config.MaxConsolidationMoves
	if moves <= 0 {
		moves = DefaultMaxConsolidationMoves
	}
	if c.onNode == nil {
		c.indexPlacements()
	}
	at := &c.scratch
	c.begin(at)
	for ; moves > 0; moves-- {
		v := c.moveCandidate(ji)
		if v < 0 {
			break
		}
		c.evictSim(at, v)
		if !c.placeGang(at, ji, ActionConsolidate) {
			continue
		}
		if !c.placeAgain(at) {
			break
		}
		reason := func(int32) string { return fmt.Sprintf("moved to another node to make room for job %s", js.job.ID) }
		c.commitEvictions(at, ji, EvictConsolidate, reason)
		return true
	}
	c.rollback(at)
	return false
}

func (c *cycle) indexPlacements() {
	// Counted first, then every node's list cut from one array.
	count := make([]int32, len(c.nodes))
	total := 0
	for pi := range c.places {
		if pl := &c.places[pi]; pl.live {
			count[pl.node]++
			total++
		}
	}
	all := make([]int32, total)
	c.onNode = make([][]int32, len(c.nodes))
	for n, k := range count {
		c.onNode[n], all = all[:0:k], all[k:]
	}
	for pi := range c.places {
		if pl := &c.places[pi]; pl.live {
			c.onNode[pl.node] = append(c.onNode[pl.node], int32(pi))
		}
	}
}

// moveCandidate picks the smallest movable job on the node closest to holding the gang's
// next task without holding it yet (the most free devices below what the task needs); -1
// when there is none.
func (c *cycle) moveCandidate(ji int32) int32 {
	js := &c.jobs[ji]
	gi := js.g0
	for c.groups[gi].running+c.groups[gi].bound >= c.groups[gi].count && gi+1 < js.gn {
		gi++
	}
	g := &c.groups[gi]
	p := &c.parts[js.part]
	for b := min(g.gpu.Devices-1, int32(len(p.whole.lists)-1)); b >= 0; b-- {
		for _, n := range p.whole.lists[b] {
			nd := &c.nodes[n]
			if (nd.reservedBy >= 0 && nd.reservedBy != ji) || !c.couldEverHold(n, ji, gi) ||
				((len(nd.resv) > 0 || c.jobs[ji].resv != 0) && c.resvBlocks(nil, ji, n)) {
				continue
			}
			if v := c.smallestMovable(n, ji); v >= 0 {
				return v
			}
		}
	}
	return -1
}

// smallestMovable is the preemptible job with a task on node n that holds the least.
func (c *cycle) smallestMovable(n, ji int32) int32 {
	best := int32(-1)
	for _, pi := range c.onNode[n] {
		pl := &c.places[pi]
		v := pl.job
		vj := &c.jobs[v]
		if !pl.live || v == ji || !vj.preempt || vj.evicted || vj.grew || vj.queue < 0 || vj.part != c.jobs[ji].part {
			continue
		}
		if best < 0 || vj.use[DimGPU] < c.jobs[best].use[DimGPU] ||
			(vj.use[DimGPU] == c.jobs[best].use[DimGPU] && vj.job.ID < c.jobs[best].job.ID) {
			best = v
		}
	}
	return best
}

// placeAgain places every task the attempt's victims lost somewhere else.
func (c *cycle) placeAgain(at *attempt) bool {
	for _, pi := range at.unplaced {
		pl := c.places[pi]
		n := c.pickNode(at, pl.job, pl.group)
		if n < 0 {
			return false
		}
		np := c.newPlacement(pl.job, pl.group, n, pl.task, c.parts[c.nodes[n].part].strategy == Spread)
		moved := &c.places[np]
		moved.action, moved.fresh, moved.start = ActionConsolidate, true, c.now
		c.groups[pl.group].bound++
		c.apply(np, +1)
	}
	return true
}
