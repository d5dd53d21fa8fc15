package bridge

import "cmp"

// Alternative is one way a job may run: a partition (sbatch -p a,b lists several) and a node
// set every task group keeps to (--constraint [a|b]: all nodes share one feature, so each
// feature is one alternative). A job runs in the first alternative, in the order listed,
// where it can start.
type Alternative struct {
	// Partition is where this alternative runs; empty: the job's Partition.
	Partition string `json:"partition,omitempty" yaml:"partition,omitempty"`
	// NodeSet names the Snapshot.NodeSets entry that replaces every group's own node set in
	// this alternative (the adapter intersects what else the job asks); empty: each group
	// keeps its own.
	NodeSet string `json:"nodeSet,omitempty" yaml:"nodeSet,omitempty"`
	// RequiredLevel and PreferredLevel, when set, replace the job's Placement's in this
	// alternative: a level of its partition's own topology (sbatch --switches in each
	// listed partition).
	RequiredLevel  string `json:"requiredLevel,omitempty" yaml:"requiredLevel,omitempty"`
	PreferredLevel string `json:"preferredLevel,omitempty" yaml:"preferredLevel,omitempty"`
}

// How the cycle treats a job of several alternatives. The job's state (partition, node
// sets, topology, demand, shape) holds one alternative at a time (useAlt). The job waits in
// the pending list of each partition it lists, in that partition's fair-share order, and
// at each partition's turn tries its alternatives there in listed order. Before it starts
// in a later-listed alternative it checks whether an earlier-listed one in a partition
// still to come could start now; if so it waits for that partition's turn (deferred), and
// a deferred job that did not start then tries all its alternatives once more after every
// partition had its turn. Rescue (freed capacity, consolidation, reclaim, preemption)
// walks the alternatives in order at each step, so no job evicts for its second choice
// while its first has room. A job with one alternative is that alternative, at no cost.

// jobAlts is a pending job's alternatives; nil for a job with one way to run.
type jobAlts struct {
	list []altState
	cur  int32   // the alternative the job's state holds now
	base []int32 // each group's own node set
	// deferred: an earlier-listed alternative in a partition still to come could start, so
	// the job waits for it; ordered: the job is in cycle.order already.
	deferred, ordered bool
}

type altState struct {
	part int32 // -1: unknown
	set  int32 // -1: the groups' own
	topo *jobTopo
	// constrained is jobState.constrained with this alternative's topology.
	constrained bool
	need        vec
	shape       int32
	// blocked: it can never run this cycle (code says why); otherwise code and reason are
	// why it did not start, "" while untried.
	blocked      bool
	code, reason string
}

// buildAlternatives resolves the job's alternatives after its groups and placement, before
// its running tasks are applied: a running job keeps to the alternative it runs in.
func (c *cycle) buildAlternatives(js *jobState) {
	j := js.job
	a := &jobAlts{list: make([]altState, len(j.Alternatives)), cur: -1}
	for gi := js.g0; gi < js.gn; gi++ {
		a.base = append(a.base, c.groups[gi].set)
	}
	saved, savedReason := js.code, js.reason
	for k := range j.Alternatives {
		alt := &j.Alternatives[k]
		st := &a.list[k]
		st.part, st.set = -1, -1
		js.code, js.reason = "", ""
		name := alt.Partition
		if name == "" {
			name = j.Partition
		}
		if p, ok := c.partIdx[name]; ok {
			st.part = p
		} else {
			js.block(ReasonInvalidPartition, "partition \""+name+"\" does not exist")
		}
		js.part = st.part
		c.checkPartitionAccess(js)
		if alt.NodeSet != "" {
			if s, ok := c.setIdx[alt.NodeSet]; ok {
				st.set = s
			} else {
				js.block(ReasonBadConstraints, "node set "+alt.NodeSet+" is not in the snapshot")
			}
		}
		pl := j.Placement
		pl.RequiredLevel = cmp.Or(alt.RequiredLevel, pl.RequiredLevel)
		pl.PreferredLevel = cmp.Or(alt.PreferredLevel, pl.PreferredLevel)
		st.topo = c.topoOf(js, &pl)
		st.constrained = js.constrained || st.topo != nil
		for gi := js.g0; gi < js.gn; gi++ {
			g := &c.groups[gi]
			st.need.add(scale(c.taskNeed(g, st.part), max(g.count, 0)))
		}
		st.blocked, st.code, st.reason = js.code != "", js.code, js.reason
	}
	js.code, js.reason = saved, savedReason
	js.alts = a
	k := c.firstOpen(a)
	if len(j.Running) > 0 {
		k = c.runningAlt(js)
	}
	c.useAlt(js, k)
	js.need = vec{} // buildJob adds up its demand next, with what runs already
	if len(a.list) == 1 || len(j.Running) > 0 || a.list[k].blocked {
		// One way to run, or the one it runs in, or none open: a plain job from here on.
		js.alts = nil
		if st := &a.list[k]; st.blocked {
			js.block(st.code, st.reason)
		}
	}
}

// firstOpen is the first alternative not blocked, else the one whose block says most.
func (c *cycle) firstOpen(a *jobAlts) int32 {
	for k := range a.list {
		if !a.list[k].blocked {
			return int32(k)
		}
	}
	return bestAlt(a)
}

// runningAlt is the alternative a running job runs in: the first whose partition and node
// set hold every node its tasks run on (0 when none does, as for a node gone).
func (c *cycle) runningAlt(js *jobState) int32 {
	for k := range js.alts.list {
		st := &js.alts.list[k]
		ok := true
		for _, rt := range js.job.Running {
			n, known := c.nodeIdx[rt.Node]
			ok = ok && known && c.nodes[n].part == st.part && (st.set < 0 || c.sets[st.set].bits.has(n))
		}
		if ok {
			return int32(k)
		}
	}
	return 0
}

// useAlt makes alternative k the job's state: partition, node sets, topology, demand, shape.
func (c *cycle) useAlt(js *jobState, k int32) {
	a := js.alts
	if a.cur == k {
		return
	}
	a.cur = k
	st := &a.list[k]
	js.part, js.topo, js.need, js.shape, js.constrained = st.part, st.topo, st.need, st.shape, st.constrained
	for gi := js.g0; gi < js.gn; gi++ {
		s := a.base[gi-js.g0]
		if st.set >= 0 {
			s = st.set
		}
		c.groups[gi].set = s
	}
}

// listAlternatives puts a pending job in the pending list of each partition it may run in,
// its demand in each one's request (it may use any of them), and keys each alternative's
// shape. add lists the job in the partition its state holds now.
func (c *cycle) listAlternatives(js *jobState, add func()) {
	a := js.alts
	for k := range a.list {
		st := &a.list[k]
		if st.blocked {
			continue
		}
		c.useAlt(js, int32(k))
		st.shape = c.shapeOf(js)
		js.shape = st.shape
		if !c.listedEarlier(a, k) {
			add()
		}
	}
	c.useAlt(js, c.firstOpen(a))
}

// listedEarlier reports whether an open alternative before k is in k's partition.
func (c *cycle) listedEarlier(a *jobAlts, k int) bool {
	for i := range k {
		if !a.list[i].blocked && a.list[i].part == a.list[k].part {
			return true
		}
	}
	return false
}

// allocateAlternatives is a job's turn in partition p: its alternatives there are tried in
// listed order, unless an earlier-listed one in a partition still to come could start now.
func (c *cycle) allocateAlternatives(p, ji int32) {
	js := &c.jobs[ji]
	a := js.alts
	if js.grew {
		return // started at another partition's turn
	}
	if !a.ordered {
		c.order = append(c.order, ji)
		a.ordered = true
	}
	blocked := int32(-1) // the first alternative here blocked for capacity
	for k := range a.list {
		st := &a.list[k]
		switch {
		case st.blocked || st.part < p:
			continue // never, or tried at its partition's turn
		case st.part == p:
			c.useAlt(js, int32(k))
			js.code, js.reason = "", ""
			if c.allocateJob(ji, false) {
				return
			}
			st.code, st.reason = js.code, js.reason
			if blocked < 0 && st.code == ReasonResources && !capacityBefore(a, k) {
				blocked = int32(k)
			}
		case c.couldStart(ji, int32(k)):
			a.deferred = true
			c.settleAlternatives(js)
			return
		}
	}
	// Nodes are held (backfill) only for a job that cannot start anywhere now, and only
	// for its first choice that waits for room: in one partition, not in each.
	if blocked >= 0 {
		c.useAlt(js, blocked)
		js.code, js.reason = a.list[blocked].code, a.list[blocked].reason
		c.reserveFor(ji)
		a.list[blocked].reason = js.reason
	}
	c.settleAlternatives(js)
}

// couldStart reports whether the job could start in alternative k (of a partition whose
// turn is still to come) now, changing nothing; when not, it notes why until that turn.
func (c *cycle) couldStart(ji, k int32) bool {
	js := &c.jobs[ji]
	st := &js.alts.list[k]
	c.useAlt(js, k)
	if code, reason := c.admit(js); code != "" {
		st.code, st.reason = code, reason
		return false
	}
	// Until the partition's turn nothing is placed there, so a shape that did not fit
	// still does not: the failure is kept in its noFit, which its turn starts afresh.
	ps := &c.parts[js.part]
	if ps.noFit == nil {
		ps.noFit = map[int32][]failure{}
	}
	if f := c.failedBefore(js); f != nil {
		st.code, st.reason = f.code, f.reason
		return false
	}
	at := &c.scratch
	c.begin(at)
	if c.quickNoFit(js) || !c.placeGang(at, ji, ActionAllocate) {
		saved, savedReason := js.code, js.reason
		js.code, js.reason = c.explainFailure(at, ji)
		st.code, st.reason = js.code, js.reason
		c.rememberFailure(js)
		js.code, js.reason = saved, savedReason
		return false
	}
	c.rollback(at)
	return true
}

// capacityBefore reports whether an open alternative listed before k waits for room too:
// the job's nodes are then held for that one, its first choice.
func capacityBefore(a *jobAlts, k int) bool {
	for i := range k {
		if st := &a.list[i]; !st.blocked && altRank(st.code) == 0 {
			return true
		}
	}
	return false
}

// allocateDeferred gives each job that waited for an earlier-listed partition's turn and
// did not start there one more try at all its alternatives, in listed order.
func (c *cycle) allocateDeferred() {
	for _, ji := range c.order {
		js := &c.jobs[ji]
		a := js.alts
		if a == nil || !a.deferred || js.grew {
			continue
		}
		for k := range a.list {
			st := &a.list[k]
			if st.blocked {
				continue
			}
			c.useAlt(js, int32(k))
			if c.allocateJob(ji, false) {
				break
			}
			st.code, st.reason = js.code, js.reason
		}
		if !js.grew {
			c.settleAlternatives(js)
		}
	}
}

// settleAlternatives gives a job that did not start the reason of its best alternative.
func (c *cycle) settleAlternatives(js *jobState) {
	if k := bestAlt(js.alts); js.alts.list[k].code != "" {
		js.code, js.reason = js.alts.list[k].code, js.alts.list[k].reason
	} else {
		js.code, js.reason = "", ""
	}
}

// bestAlt is the alternative whose reason says the job is closest to starting, the first
// listed among equals.
func bestAlt(a *jobAlts) int32 {
	best := int32(0)
	for k := range a.list {
		if altRank(a.list[k].code) < altRank(a.list[best].code) {
			best = int32(k)
		}
	}
	return best
}

// altRank orders pending codes by how near they are to a start: capacity (it will start
// when work ends), limits, unavailable nodes, then what can never run; untried last.
func altRank(code string) int {
	switch code {
	case ReasonResources, ReasonReservation, ReasonPriority:
		return 0
	case ReasonReqNodeNotAvail:
		return 2
	case ReasonBadConstraints, ReasonPartitionConfig, ReasonInvalidPartition, ReasonAccountNotAllowed, ReasonQOSNotAllowed:
		return 3
	case "":
		return 4
	}
	return 1
}

// rescueAlternatives runs rescue's steps for a job of several alternatives: each step
// (freed capacity, consolidation, reclaim, preemption) over its alternatives blocked for
// capacity, in listed order, so nothing is evicted for a later choice while an earlier one
// could start without. It reports whether the job started.
func (c *cycle) rescueAlternatives(ji int32, failed map[rescueKey]bool) bool {
	js := &c.jobs[ji]
	a := js.alts
	steps := [...]func(int32) bool{c.placeOnFreed, c.consolidate, c.reclaim, c.preempt}
	for _, step := range steps {
		for k := range a.list {
			st := &a.list[k]
			if st.code != ReasonResources && st.code != ReasonReservation {
				continue
			}
			c.useAlt(js, int32(k))
			if failed[rescueKey{js.part, js.queue, c.gpuShape(js)}] {
				continue
			}
			if code, reason := c.admit(js); code != "" {
				st.code, st.reason = code, reason
				continue
			}
			if step(ji) {
				return true
			}
		}
	}
	for k := range a.list {
		if st := &a.list[k]; st.code == ReasonResources || st.code == ReasonReservation {
			c.useAlt(js, int32(k))
			failed[rescueKey{js.part, js.queue, c.gpuShape(js)}] = true
		}
	}
	c.settleAlternatives(js)
	return false
}
