package bridge

// apply adds (sign +1) or removes (sign -1) a placement's usage everywhere it counts.
func (c *cycle) apply(pi int32, sign int64) {
	pl := &c.places[pi]
	pl.live = sign > 0
	c.applies++
	nd := &c.nodes[pl.node]
	g := &c.groups[pl.group]
	for _, d := range [...]Dim{DimCPU, DimMemory} {
		nd.free[d] -= sign * pl.use[d]
		if nd.schedulable {
			c.parts[nd.part].free[d] -= sign * pl.use[d]
		}
	}
	for _, e := range g.ext {
		if int(e.idx) < len(nd.ext) {
			nd.ext[e.idx] -= sign * e.v
		}
	}
	for _, r := range c.gpuRefs[pl.g0:pl.gn] {
		gp := &c.gpus[r]
		if pl.whole {
			gp.whole = sign > 0
		} else {
			gp.milli += int32(sign) * pl.milli
			gp.usedMem += sign * pl.mem
			gp.sharers += int32(sign)
		}
	}
	if pl.gn > pl.g0 && !c.building {
		c.refreshNode(pl.node) // while building, every node is refreshed once at the end
	}
	js := &c.jobs[pl.job]
	nd.tasks += int32(sign)
	if js.exclusive {
		c.noteExclusive(nd, pl.job, sign)
	}
	if js.aff != nil {
		c.noteAffinity(js.aff, pl.node, int32(sign))
	}
	if js.onePerNode {
		c.notePerNode(js, pl.node, int32(sign))
	}
	if sign > 0 {
		js.use.add(pl.use)
		c.noteBusy(nd, js, pl)
	} else {
		js.use.sub(pl.use)
	}
	c.account(pl.job, pl.use, sign)
}

func (c *cycle) noteBusy(nd *nodeState, js *jobState, pl *placement) {
	if js.job.TimeLimit <= 0 || pl.start == 0 {
		nd.busyForever = true
		return
	}
	nd.busyUntil = max(nd.busyUntil, pl.start+int64(js.job.TimeLimit))
}

// refreshNode recomputes a node's device summary and its buckets after its devices changed.
func (c *cycle) refreshNode(n int32) {
	nd := &c.nodes[n]
	oldMilli, oldMem := nd.free[DimGPU], nd.free[DimGPUMemory]
	var freeWhole, maxRoom int32
	var freeMilli, freeMem int64
	for i := nd.g0; i < nd.gn; i++ {
		gp := &c.gpus[i]
		if gp.unhealthy {
			continue
		}
		if gp.entirelyFree() {
			freeWhole++
		}
		if !gp.whole {
			freeMilli += int64(1000 - gp.milli)
			freeMem += gp.mem - gp.usedMem
			if room := gp.roomMilli(); gp.sharers > 0 && room > maxRoom {
				maxRoom = room
			}
		}
	}
	nd.freeWhole, nd.maxRoom = freeWhole, maxRoom
	nd.free[DimGPU], nd.free[DimGPUMemory] = freeMilli, freeMem
	if !nd.schedulable {
		return
	}
	p := &c.parts[nd.part]
	p.free[DimGPU] += freeMilli - oldMilli
	p.free[DimGPUMemory] += freeMem - oldMem
	if c.building {
		return // buckets are filled in node order once the snapshot is applied
	}
	p.whole.move(n, freeWhole)
	roomBucket := int32(-1)
	if maxRoom > 0 && !nd.mig {
		roomBucket = min(maxRoom/100, int32(len(p.room.lists)-1))
	}
	p.room.move(n, roomBucket)
}

// account adds a placement's usage to its queue path, QOS and user.
func (c *cycle) account(ji int32, u vec, sign int64) {
	js := &c.jobs[ji]
	if js.queue >= 0 && js.part >= 0 {
		for q := js.queue; q >= 0; q = c.queues[q].parent {
			qp := c.qpart(q, js.part)
			if sign > 0 {
				qp.alloc.add(u)
				if !js.preempt {
					qp.nonPreempt.add(u)
				}
			} else {
				qp.alloc.sub(u)
				if !js.preempt {
					qp.nonPreempt.sub(u)
				}
			}
			if !c.building { // fair shares come later; divideFairShare sets every ratio
				qp.ratio = shareRatio(qp)
			}
		}
	}
	if js.qos >= 0 {
		qs := &c.qos[js.qos]
		if sign > 0 {
			qs.use.add(u)
		} else {
			qs.use.sub(u)
		}
		if !qs.perUser() {
			return
		}
		uu := c.user(js)
		uu.gpu += sign * u[DimGPU]
		live := 0
		for _, pi := range js.places {
			if c.places[pi].live {
				live++
			}
		}
		if sign > 0 && live == 1 {
			uu.jobs++ // its first task started
		}
		if sign < 0 && live == 0 {
			uu.jobs-- // its last task went
		}
	}
}

// perUser reports whether the QOS limits each user, so that usage per user must be kept.
func (qs *qosState) perUser() bool { return qs.q.MaxJobsPerUser > 0 || qs.q.MaxGPUsPerUser > 0 }

func (c *cycle) user(js *jobState) *userUsage {
	if js.uu != nil {
		return js.uu
	}
	k := userKey{js.qos, js.job.User}
	u := c.users[k]
	if u == nil {
		u = &userUsage{}
		c.users[k] = u
	}
	js.uu = u
	return u
}
