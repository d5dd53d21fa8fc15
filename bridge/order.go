package bridge

// queueBefore reports whether leaf a should be served before leaf b in partition p. It
// compares the two ancestors where their paths part, so that fairness holds at every level
// of the tree: a queue under its fair share first, then higher priority, then the smaller
// dominant share, then the name.
func (c *cycle) queueBefore(a, b, p int32) bool {
	pa, pb := c.queues[a].path, c.queues[b].path
	i := 0
	for i < len(pa) && i < len(pb) && pa[i] == pb[i] {
		i++
	}
	if i == len(pa) || i == len(pb) {
		return a < b
	}
	x, y := pa[i], pb[i]
	qx, qy := c.qpart(x, p), c.qpart(y, p)
	if ux, uy := qx.ratio < 1, qy.ratio < 1; ux != uy {
		return ux
	}
	if px, py := c.queues[x].priority, c.queues[y].priority; px != py {
		return px > py
	}
	if qx.ratio != qy.ratio {
		return qx.ratio < qy.ratio
	}
	return x < y
}

// nextJob pops the next job to consider in partition p: the first waiting job of the leaf
// that comes first. It returns -1 when no job waits.
func (c *cycle) nextJob(p int32) int32 {
	ps := &c.parts[p]
	best := -1
	for i := range ps.pending {
		lp := &ps.pending[i]
		if lp.next >= len(lp.jobs) {
			continue
		}
		if best < 0 || c.queueBefore(lp.queue, ps.pending[best].queue, p) {
			best = i
		}
	}
	if best < 0 {
		return -1
	}
	lp := &ps.pending[best]
	lp.next++
	return lp.jobs[lp.next-1]
}
