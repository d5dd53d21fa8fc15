package bridge

// pickNode returns the node where one task of group gi goes, -1 when none fits. It walks the
// partition's buckets in strategy order, so it looks only at nodes with enough free devices:
// binpack takes the fullest node that fits, spread the emptiest.
func (c *cycle) pickNode(at *attempt, ji, gi int32) int32 {
	if c.groups[gi].score >= 0 {
		return c.pickScored(at, ji, gi)
	}
	return c.pickUnscored(at, ji, gi)
}

func (c *cycle) pickUnscored(at *attempt, ji, gi int32) int32 {
	js := &c.jobs[ji]
	g := &c.groups[gi]
	p := &c.parts[js.part]
	spread := p.strategy == Spread
	top := int32(len(p.whole.lists) - 1)
	switch g.gpu.Kind {
	case GPUWhole:
		return c.scanWhole(at, ji, gi, p, g.gpu.Devices, top, spread)
	case GPUNone:
		return c.scanWhole(at, ji, gi, p, 0, top, spread)
	}
	low := minRoomBucket(g, p.maxGPUMem)
	if spread {
		if n := c.scanWhole(at, ji, gi, p, 1, top, true); n >= 0 {
			return n
		}
		return c.scanRoom(at, ji, gi, p, low, true)
	}
	if n := c.scanRoom(at, ji, gi, p, low, false); n >= 0 {
		return n
	}
	return c.scanWhole(at, ji, gi, p, 1, top, false)
}

func (c *cycle) scanWhole(at *attempt, ji, gi int32, p *partState, from, top int32, spread bool) int32 {
	if spread {
		for b := top; b >= from; b-- {
			if n := c.scan(at, ji, gi, p.whole.lists[b]); n >= 0 {
				return n
			}
		}
		return -1
	}
	for b := from; b <= top; b++ {
		if n := c.scan(at, ji, gi, p.whole.lists[b]); n >= 0 {
			return n
		}
	}
	return -1
}

func (c *cycle) scanRoom(at *attempt, ji, gi int32, p *partState, low int32, spread bool) int32 {
	top := int32(len(p.room.lists) - 1)
	if spread {
		for b := top; b >= low; b-- {
			if n := c.scan(at, ji, gi, p.room.lists[b]); n >= 0 {
				return n
			}
		}
		return -1
	}
	for b := low; b <= top; b++ {
		if n := c.scan(at, ji, gi, p.room.lists[b]); n >= 0 {
			return n
		}
	}
	return -1
}

// minRoomBucket is the lowest room bucket that can hold a shared task.
func minRoomBucket(g *groupReq, maxGPUMem int64) int32 {
	milli := int64(g.gpu.Milli)
	if g.gpu.Kind == GPUMemory && maxGPUMem > 0 {
		milli = (g.gpu.MemoryMiB*1000 + maxGPUMem - 1) / maxGPUMem
	}
	return int32(min(max(milli, 1), 999) / 100)
}

func (c *cycle) scan(at *attempt, ji, gi int32, list []int32) int32 {
	if c.groups[gi].score >= 0 {
		return c.scanScored(at, ji, gi, list)
	}
	for _, n := range list {
		if c.fits(at, ji, gi, n) {
			return n
		}
	}
	return -1
}

// fits reports whether one task of group gi may go on node n now.
func (c *cycle) fits(at *attempt, ji, gi, n int32) bool {
	nd := &c.nodes[n]
	g := &c.groups[gi]
	if g.base[DimCPU] > nd.free[DimCPU] || g.base[DimMemory] > nd.free[DimMemory] {
		return false
	}
	for _, e := range g.ext {
		if int(e.idx) >= len(nd.ext) || nd.ext[e.idx] < e.v {
			return false
		}
	}
	js := &c.jobs[ji]
	if len(js.job.NodeSelector) > 0 && !matches(nd.labels, js.job.NodeSelector) {
		return false
	}
	if !c.gpuFits(nd, g) {
		return false
	}
	// Most jobs ask nothing of placement and most nodes are not held exclusively.
	if (g.set >= 0 || nd.exclusive >= 0 || js.constrained) && !c.placementAllows(ji, g, n) {
		return false
	}
	if nd.reservedBy >= 0 && nd.reservedBy != ji && !c.mayBackfill(js, nd) {
		at.hitReservation = true
		return false
	}
	if (len(nd.resv) > 0 || js.resv != 0) && c.resvBlocks(at, ji, n) {
		return false
	}
	return true
}

func (c *cycle) gpuFits(nd *nodeState, g *groupReq) bool {
	switch g.gpu.Kind {
	case GPUNone:
		return true
	case GPUWhole:
		return nd.freeWhole >= g.gpu.Devices
	}
	if nd.mig {
		return false
	}
	want := int32(1)
	if g.gpu.Kind == GPUMultiFraction {
		want = g.gpu.Devices
	}
	for i := nd.g0; i < nd.gn && want > 0; i++ {
		if _, _, ok := shareAsk(&c.gpus[i], g); ok {
			want--
		}
	}
	return want == 0
}

// mayBackfill reports whether a job may use a node held for another gang: only when its time
// limit ends before the held nodes are expected to be free.
func (c *cycle) mayBackfill(js *jobState, nd *nodeState) bool {
	p := &c.parts[nd.part]
	return js.job.TimeLimit > 0 && p.reservedUntil != 0 && c.now+int64(js.job.TimeLimit) <= p.reservedUntil
}

// couldEverHold reports whether node n, emptied of all work, could hold one task of group
// gi of job ji.
func (c *cycle) couldEverHold(n, ji, gi int32) bool {
	nd, g, js := &c.nodes[n], &c.groups[gi], &c.jobs[ji]
	if !nd.schedulable || g.base[DimCPU] > nd.capacity[DimCPU] || g.base[DimMemory] > nd.capacity[DimMemory] {
		return false
	}
	if sel := js.job.NodeSelector; len(sel) > 0 && !matches(nd.labels, sel) {
		return false
	}
	if !c.mayEverUse(js, g, n) || !c.resvEverAllows(ji, n) {
		return false
	}
	switch g.gpu.Kind {
	case GPUNone:
		return true
	case GPUWhole:
		return nd.capWhole >= g.gpu.Devices
	}
	if nd.mig {
		return false
	}
	want := int32(1)
	if g.gpu.Kind == GPUMultiFraction {
		want = g.gpu.Devices
	}
	for i := nd.g0; i < nd.gn; i++ {
		gp := c.gpus[i]
		gp.whole, gp.milli, gp.usedMem, gp.sharers = false, 0, 0, 0
		if _, _, ok := shareAsk(&gp, g); ok {
			want--
		}
	}
	return want <= 0
}

func matches(labels, sel map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
