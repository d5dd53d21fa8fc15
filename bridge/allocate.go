package bridge

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// allocate considers every pending job of partition p in fair-share order and places the
// gangs that fit on free capacity. The first gang blocked for lack of capacity reserves the
// nodes it will get (backfill), so smaller jobs cannot starve it.
func (c *cycle) allocate(p int32) {
	c.parts[p].noFit = map[int32][]failure{}
	for ji := c.nextJob(p); ji >= 0; ji = c.nextJob(p) {
		if c.jobs[ji].alts != nil {
			c.allocateAlternatives(p, ji) // alternatives.go
			continue
		}
		c.order = append(c.order, ji)
		c.allocateJob(ji, true)
	}
}

// allocateJob starts a job in its partition on free capacity if it fits, else says why not
// and, when it may, reserves nodes for it. It reports whether the job started.
func (c *cycle) allocateJob(ji int32, mayReserve bool) bool {
	js := &c.jobs[ji]
	at := &c.scratch
	if code, reason := c.admit(js); code != "" {
		js.code, js.reason = code, reason
		return false
	}
	if f := c.failedBefore(js); f != nil {
		js.code, js.reason = f.code, f.reason
		return false
	}
	c.begin(at)
	if c.quickNoFit(js) || !c.placeGang(at, ji, ActionAllocate) {
		js.code, js.reason = c.explainFailure(at, ji)
		c.rememberFailure(js)
		if mayReserve {
			c.reserveFor(ji)
		}
		return false
	}
	c.commit(at, ji, "", "")
	return true
}

// failedBefore returns an earlier failure of a gang of the same shape asking no more CPU and
// memory, nil when there is none.
func (c *cycle) failedBefore(js *jobState) *failure {
	base := c.groups[js.g0].base
	fs := c.parts[js.part].noFit[js.shape]
	for i := range fs {
		if fs[i].cpu <= base[DimCPU] && fs[i].mem <= base[DimMemory] {
			return &fs[i]
		}
	}
	return nil
}

// rememberFailure records a failed gang; entries it makes redundant (asking more) go.
func (c *cycle) rememberFailure(js *jobState) {
	base := c.groups[js.g0].base
	ps := &c.parts[js.part]
	fs := slices.DeleteFunc(ps.noFit[js.shape], func(f failure) bool {
		return f.cpu >= base[DimCPU] && f.mem >= base[DimMemory]
	})
	ps.noFit[js.shape] = append(fs, failure{cpu: base[DimCPU], mem: base[DimMemory], code: js.code, reason: js.reason})
}

// quickNoFit reports that a gang whose every task is required cannot fit in the partition's
// free capacity taken together, before looking at any node.
func (c *cycle) quickNoFit(js *jobState) bool {
	if js.minMember < js.running+js.pending {
		return false
	}
	free := &c.parts[js.part].free
	for _, d := range shareDims {
		if js.need[d] > free[d] {
			return true
		}
	}
	return false
}

// explainFailure says why a gang did not fit, in a line a user understands.
func (c *cycle) explainFailure(at *attempt, ji int32) (string, string) {
	js := &c.jobs[ji]
	ps := &c.parts[js.part]
	if at.hitReservation && ps.reservedBy >= 0 {
		return ReasonReservation, fmt.Sprintf("waiting behind reservation for job %s in partition %s", c.jobs[ps.reservedBy].job.ID, ps.name)
	}
	if code, reason := c.explainResv(at); code != "" {
		return code, reason
	}
	gi := at.failGroup
	if gi < 0 {
		gi = js.g0
		for i := js.g0; i < js.gn; i++ {
			if c.groups[i].count > c.groups[i].running {
				gi = i
				break
			}
		}
	}
	g := &c.groups[gi]
	want := g.count - g.running
	what := describeTask(g)
	if code, reason := c.explainPlacement(ji, gi); code != "" {
		return code, reason
	}
	if !slices.ContainsFunc(ps.nodes, func(n int32) bool { return c.couldEverHold(n, ji, gi) }) {
		return ReasonPartitionConfig, fmt.Sprintf("no node in partition %s can ever hold a task of %s", ps.name, what)
	}
	if want == 1 {
		return ReasonResources, fmt.Sprintf("needs %s in partition %s; no node has that free now", what, ps.name)
	}
	placed := int32(0)
	if at.failGroup >= 0 {
		placed = at.failPlaced
	}
	return ReasonResources, fmt.Sprintf("gang needs %d tasks of %s in partition %s; %d fit now", want, what, ps.name, placed)
}

// commit makes an attempt final: victims' evictions, then the binds it placed.
func (c *cycle) commit(at *attempt, ji int32, kind EvictionKind, reason string) {
	after := len(at.unplaced) > 0
	for _, pi := range at.unplaced {
		c.emitEviction(pi, kind, c.jobs[ji].job.ID, reason)
	}
	for i := at.firstPlace; i < len(c.places); i++ {
		c.emitBind(int32(i), after)
	}
	c.jobs[ji].code, c.jobs[ji].reason = "", ""
	c.jobs[ji].grew = true
	c.leaveVictims(at, ji)
	at.unplaced = at.unplaced[:0]
	at.victims = at.victims[:0]
}

func (c *cycle) emitEviction(pi int32, kind EvictionKind, forJob, reason string) {
	pl := &c.places[pi]
	c.d.Evictions = append(c.d.Evictions, Eviction{Job: c.jobs[pl.job].job.ID, Task: pl.task,
		Node: c.nodes[pl.node].name, Kind: kind, ForJob: forJob, Reason: reason})
}

// bindRef is a committed placement, to be reported as a bind when the cycle ends. A committed
// placement never changes again (its job grew, so it is nobody's victim), and writing the
// binds at the end sizes their arrays once.
type bindRef struct {
	place int32
	after bool
}

// onReleasing reports whether a placement takes a device whose hold is still going: its
// bind waits for it as for a victim.
func (c *cycle) onReleasing(pl *placement) bool {
	for _, r := range c.gpuRefs[pl.g0:pl.gn] {
		if c.gpus[r].releasing {
			return true
		}
	}
	return false
}

func (c *cycle) emitBind(pi int32, after bool) {
	c.binds = append(c.binds, bindRef{pi, after})
}

// reportBinds writes the binds committed this cycle, in the order they were.
func (c *cycle) reportBinds() {
	if len(c.binds) == 0 {
		return
	}
	gpus := 0
	for _, br := range c.binds {
		pl := &c.places[br.place]
		gpus += int(pl.gn - pl.g0)
	}
	bound := make([]BoundGPU, 0, gpus)
	c.d.Binds = make([]Bind, len(c.binds))
	for i, br := range c.binds {
		pl := &c.places[br.place]
		b := &c.d.Binds[i]
		*b = Bind{Job: c.jobs[pl.job].job.ID, Group: c.groups[pl.group].name, Task: pl.task,
			Node: c.nodes[pl.node].name, Action: pl.action, AfterEvictions: br.after || c.onReleasing(pl)}
		if pl.gn > pl.g0 {
			start := len(bound)
			for _, r := range c.gpuRefs[pl.g0:pl.gn] {
				bound = append(bound, BoundGPU{Index: c.gpus[r].index, UUID: c.gpus[r].uuid})
			}
			b.GPUs = bound[start:len(bound):len(bound)]
			b.GPUMilli, b.GPUMemoryMiB = pl.milli, pl.mem
			if pl.whole {
				b.GPUMemoryMiB = c.gpus[c.gpuRefs[pl.g0]].mem
			}
		}
	}
}

// reserveFor reserves nodes for a blocked gang when its partition holds none yet.
func (c *cycle) reserveFor(ji int32) {
	js := &c.jobs[ji]
	if js.code == ReasonResources && c.parts[js.part].reservedBy < 0 && js.need[DimGPU] > 1000 {
		c.reserve(ji)
	}
}

// reserve holds nodes for a blocked whole-GPU gang of more than one GPU (a single GPU
// cannot be starved by other work: the next one to free is its): the nodes with the most free devices that
// could hold its tasks. Other jobs may not use them unless their time limit ends before the
// held nodes are expected to be free.
func (c *cycle) reserve(ji int32) {
	js := &c.jobs[ji]
	ps := &c.parts[js.part]
	for gi := js.g0; gi < js.gn; gi++ {
		if c.groups[gi].gpu.Kind != GPUWhole {
			return
		}
	}
	// Nodes advance reservations keep it off now are no use to hold: they are the
	// reservation's when the window opens, and free for the gang only after it.
	cands := slices.DeleteFunc(slices.Clone(ps.nodes), func(n int32) bool {
		return (len(c.nodes[n].resv) > 0 || js.resv != 0) && c.resvBlocks(nil, ji, n)
	})
	slices.SortFunc(cands, func(a, b int32) int {
		na, nb := &c.nodes[a], &c.nodes[b]
		if na.freeWhole != nb.freeWhole {
			return int(nb.freeWhole - na.freeWhole)
		}
		if na.busyForever != nb.busyForever {
			if na.busyForever {
				return 1
			}
			return -1
		}
		if d := cmp.Compare(na.busyUntil, nb.busyUntil); d != 0 {
			return d
		}
		return cmp.Compare(a, b)
	})
	left := make([]int32, len(cands)) // devices each candidate still has for the gang
	for i, n := range cands {
		left[i] = c.nodes[n].capWhole
	}
	var held []int32
	for gi := js.g0; gi < js.gn; gi++ {
		g := &c.groups[gi]
		for t := g.running; t < g.count; t++ {
			i := -1
			for k, n := range cands {
				if left[k] >= g.gpu.Devices && c.couldEverHold(n, ji, gi) {
					i = k
					break
				}
			}
			if i < 0 {
				return // the gang can never fit whole; holding nodes would only waste them
			}
			left[i] -= g.gpu.Devices
			if !slices.Contains(held, cands[i]) {
				held = append(held, cands[i])
			}
		}
	}
	ps.reservedBy = ji
	names := make([]string, len(held))
	until, known := c.now, true
	for i, n := range held {
		nd := &c.nodes[n]
		nd.reservedBy = ji
		names[i] = nd.name
		known = known && !nd.busyForever
		if nd.busyUntil > until {
			until = nd.busyUntil
		}
	}
	if known {
		ps.reservedUntil = until
	}
	slices.Sort(names)
	c.d.Reservations = append(c.d.Reservations, Reservation{Job: js.job.ID, Partition: ps.name, Nodes: names})
	js.reason += "; holding nodes " + strings.Join(names, ", ")
}
