package bridge

import "strconv"

// attempt is one all-or-nothing transaction: the placements it added and the placements of
// victims it took away, so that rollback restores the state exactly.
type attempt struct {
	firstPlace int
	firstRef   int
	unplaced   []int32 // victims' placements taken away, in order
	victims    []int32 // victim jobs, in order
	// hitReservation is set when a task would have fit on a node held for another gang.
	hitReservation bool
	// hitResv is the first advance reservation (index plus one) that kept a task off a
	// node it would have fit on; 0: none did.
	hitResv int32
	// failGroup and failPlaced describe the first group that could not be placed.
	failGroup  int32
	failPlaced int32
}

func (c *cycle) begin(at *attempt) {
	at.firstPlace = len(c.places)
	at.firstRef = len(c.gpuRefs)
	at.unplaced = at.unplaced[:0]
	at.victims = at.victims[:0]
	at.hitReservation = false
	at.hitResv = 0
	at.failGroup = -1
}

// rollback undoes an attempt: new placements first, then the victims come back.
func (c *cycle) rollback(at *attempt) {
	c.unplace(at.firstPlace, at.firstRef)
	for i := len(at.unplaced) - 1; i >= 0; i-- {
		c.apply(at.unplaced[i], +1)
	}
	for _, v := range at.victims {
		c.jobs[v].evicted = false
	}
	at.unplaced = at.unplaced[:0]
	at.victims = at.victims[:0]
}

// unplace removes the placements made since the mark, newest first.
func (c *cycle) unplace(mark, markRef int) {
	for i := len(c.places) - 1; i >= mark; i-- {
		pl := &c.places[i]
		if pl.live {
			c.apply(int32(i), -1)
		}
		js := &c.jobs[pl.job]
		js.places = js.places[:len(js.places)-1]
		c.groups[pl.group].bound--
	}
	c.places = c.places[:mark]
	c.gpuRefs = c.gpuRefs[:markRef]
}

// evictSim takes a running job's placements away inside an attempt.
func (c *cycle) evictSim(at *attempt, ji int32) {
	js := &c.jobs[ji]
	js.evicted = true
	at.victims = append(at.victims, ji)
	for _, pi := range js.places {
		if c.places[pi].live {
			c.apply(pi, -1)
			at.unplaced = append(at.unplaced, pi)
		}
	}
}

// placeTasks places a job's pending tasks, all or nothing up to its minMember, then as many
// more as fit. It reports whether the gang is placed; on failure the state is unchanged.
// Callers use placeGang, which keeps to the job's topology.
func (c *cycle) placeTasks(at *attempt, ji int32, action Action) bool {
	js := &c.jobs[ji]
	required := js.minMember - js.running
	placed := int32(0)
	mark, markRef := len(c.places), len(c.gpuRefs)
	for gi := js.g0; gi < js.gn; gi++ {
		g := &c.groups[gi]
		for g.running+g.bound < g.count {
			if !c.placeTask(at, ji, gi, action) {
				if at.failGroup < 0 {
					at.failGroup, at.failPlaced = gi, g.bound
				}
				break
			}
			placed++
		}
		if placed < required && g.running+g.bound < g.count && js.minMember == c.taskCount(js) {
			break // every task is required and this one cannot go anywhere
		}
	}
	if placed < required || placed == 0 {
		c.unplace(mark, markRef)
		return false
	}
	return true
}

func (c *cycle) taskCount(js *jobState) int32 {
	n := int32(0)
	for gi := js.g0; gi < js.gn; gi++ {
		n += c.groups[gi].count
	}
	return n
}

// placeTask puts one task of group gi on the best node of the job's partition.
func (c *cycle) placeTask(at *attempt, ji, gi int32, action Action) bool {
	n := c.pickNode(at, ji, gi)
	if n < 0 {
		return false
	}
	c.placeOn(ji, gi, n, action)
	return true
}

// placeOn puts the next task of group gi on node n, which must fit it.
func (c *cycle) placeOn(ji, gi, n int32, action Action) {
	g := &c.groups[gi]
	js := &c.jobs[ji]
	ordinal := g.running + g.bound
	task := ""
	if k := int(g.bound); k < len(g.names) {
		task = g.names[k]
	} else {
		task = js.job.ID + "-" + g.name + "-" + strconv.Itoa(int(ordinal))
	}
	pi := c.newPlacement(ji, gi, n, task, c.parts[js.part].strategy == Spread)
	pl := &c.places[pi]
	pl.action, pl.fresh, pl.start = action, true, c.now
	g.bound++
	c.apply(pi, +1)
}

// newPlacement records a placement of one task of group gi on node n, choosing its devices,
// without applying it.
func (c *cycle) newPlacement(ji, gi, n int32, task string, spread bool) int32 {
	g := &c.groups[gi]
	pl := placement{job: ji, group: gi, node: n, task: task, g0: int32(len(c.gpuRefs))}
	switch g.gpu.Kind {
	case GPUWhole:
		pl.whole, pl.milli = true, 1000
		c.takeWhole(n, g.gpu.Devices)
	case GPUFraction, GPUMemory, GPUMultiFraction:
		pl.milli, pl.mem = c.takeShared(n, g, g.devices(), spread)
	}
	return c.addPlacement(pl)
}

// addPlacement completes a placement whose devices are the gpuRefs from pl.g0 on, and
// stores it (not applied).
func (c *cycle) addPlacement(pl placement) int32 {
	pl.gn = int32(len(c.gpuRefs))
	pl.use = c.groups[pl.group].base
	for _, r := range c.gpuRefs[pl.g0:pl.gn] {
		if pl.whole {
			pl.use[DimGPU] += 1000
			pl.use[DimGPUMemory] += c.gpus[r].mem
		} else {
			pl.use[DimGPU] += int64(pl.milli)
			pl.use[DimGPUMemory] += pl.mem
		}
	}
	if js := &c.jobs[pl.job]; js.exclusive && js.onePerNode {
		// A task that holds its node alone is charged the whole node, as Slurm charges an
		// --exclusive job: its queue, QOS and user pay for what no one else may use.
		cap := c.nodes[pl.node].capacity
		for d := range pl.use {
			pl.use[d] = max(pl.use[d], cap[d])
		}
	}
	c.places = append(c.places, pl)
	pi := int32(len(c.places) - 1)
	c.jobs[pl.job].places = append(c.jobs[pl.job].places, pi)
	return pi
}

// takeWhole appends the first k entirely free devices of node n.
func (c *cycle) takeWhole(n int32, k int32) {
	nd := &c.nodes[n]
	for i := nd.g0; i < nd.gn && k > 0; i++ {
		if c.gpus[i].entirelyFree() {
			c.gpuRefs = append(c.gpuRefs, i)
			k--
		}
	}
}

// shareAsk is what one task of g takes on device gp; ok is false when it does not fit there.
func shareAsk(gp *gpuState, g *groupReq) (milli int32, mem int64, ok bool) {
	room := gp.roomMilli()
	if room <= 0 || gp.mem <= 0 {
		return 0, 0, false
	}
	if g.gpu.Kind == GPUMemory {
		mem = g.gpu.MemoryMiB
		milli = int32((mem*1000 + gp.mem - 1) / gp.mem)
	} else {
		milli = g.gpu.Milli
		mem = gp.mem * int64(milli) / 1000
	}
	return milli, mem, milli <= room && gp.usedMem+mem <= gp.mem
}

// takeShared appends the k devices of node n that suit a shared task best: for binpack the
// fullest shared device that fits, for spread an untouched one first.
func (c *cycle) takeShared(n int32, g *groupReq, k int32, spread bool) (int32, int64) {
	nd := &c.nodes[n]
	var milli int32
	var mem int64
	start := int32(len(c.gpuRefs))
	for ; k > 0; k-- {
		best, bestKey := int32(-1), int32(0)
		for i := nd.g0; i < nd.gn; i++ {
			if c.refTaken(start, i) {
				continue
			}
			gp := &c.gpus[i]
			m, b, ok := shareAsk(gp, g)
			if !ok {
				continue
			}
			// key: lower is better. Binpack prefers shared devices with the least room;
			// spread prefers untouched devices, then the most room.
			key := gp.roomMilli()
			if gp.sharers == 0 {
				key += 1000
			}
			if spread {
				key = -key
			}
			if best < 0 || key < bestKey {
				best, bestKey, milli, mem = i, key, m, b
			}
		}
		if best < 0 {
			break // only for running tasks listed without devices on a node short of them
		}
		c.gpuRefs = append(c.gpuRefs, best)
	}
	return milli, mem
}

func (c *cycle) refTaken(from int32, gpu int32) bool {
	for _, r := range c.gpuRefs[from:] {
		if r == gpu {
			return true
		}
	}
	return false
}
