package bridge

// spreadCounts is, for one job, group and spread level, how many of the job's tasks hold
// each domain now, and the fewest any allowed domain holds. It is kept until a placement
// is applied or taken away anywhere (cycle.applies), so a scan over many nodes counts once.
type spreadCounts struct {
	job, group, level, sel int32
	applies                int64   // cycle.applies when counted
	counts                 []int32 // per domain; -1: no allowed node there
	least                  int32
}

// spreadAllows reports whether one more task of job ji, group g, on node n keeps the
// rule's skew.
func (c *cycle) spreadAllows(ji int32, g *groupReq, sp spreadRule, n int32) bool {
	d := c.levels[sp.level].dom[n]
	if d < 0 {
		return false
	}
	sc := c.spreadOf(ji, g, sp)
	return sc.counts[d]+1-sc.least <= sp.maxSkew
}

func (c *cycle) spreadOf(ji int32, g *groupReq, sp spreadRule) *spreadCounts {
	level := sp.level
	js := &c.jobs[ji]
	gi := int32(-1)
	if g.set >= 0 {
		gi = g.set // groups with one node set share their domains
	}
	sc := &c.spread
	if sc.counts != nil && sc.job == ji && sc.group == gi && sc.level == level && sc.sel == sp.sel && sc.applies == c.applies {
		return sc
	}
	lev := &c.levels[level]
	sc.job, sc.group, sc.level, sc.sel, sc.applies = ji, gi, level, sp.sel, c.applies
	sc.counts = append(sc.counts[:0], make([]int32, len(lev.names))...)
	for i := range sc.counts {
		sc.counts[i] = -1
	}
	var onNode []int32 // a selector's tasks, counted on the allowed nodes only
	if sp.sel >= 0 {
		onNode = c.sels[sp.sel].onNode
	}
	for _, n := range c.parts[js.part].nodes {
		if d := lev.dom[n]; d >= 0 && (g.set < 0 || c.sets[g.set].bits.has(n)) {
			sc.counts[d] = max(sc.counts[d], 0)
			if onNode != nil {
				sc.counts[d] += onNode[n]
			}
		}
	}
	for _, pi := range js.places {
		if pl := &c.places[pi]; pl.live && onNode == nil {
			if d := lev.dom[pl.node]; d >= 0 && sc.counts[d] >= 0 {
				sc.counts[d]++
			}
		}
	}
	sc.least = -1
	domains := int32(0)
	for _, k := range sc.counts {
		if k >= 0 {
			domains++
		}
		if k >= 0 && (sc.least < 0 || k < sc.least) {
			sc.least = k
		}
	}
	if domains < sp.minDomains {
		sc.least = 0 // fewer domains than wanted: the missing ones count as empty
	}
	return sc
}
