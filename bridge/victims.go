package bridge

import (
	"cmp"
	"slices"
	"strings"
)

// victimQueue is one leaf queue's running preemptible jobs in a partition. The jobs are put
// in eviction order (lowest priority, then youngest, first) only when an eviction first walks
// them: most cycles walk a few queues, and ordering 100k running jobs in every cycle was a
// visible share of the cycle (measured: docs/benchmarks.md, Scheduling core).
type victimQueue struct {
	queue  int32
	jobs   []int32
	sorted bool
	// held copies, once sorted, the placements of jobs[k] to held[heldAt[k]:heldAt[k+1]],
	// so that the walk for a one-task job reads one array, not 100k scattered placements.
	held   []victimHold
	heldAt []int32
	// below[k] sums what jobs[:k] held when sorted (nothing for a job already evicted or
	// grown); left lists the jobs that left since (evicted or grown for good), so that what
	// the first k still hold is known without walking them.
	below []vec
	left  []leftVictim
}

// leftVictim is a victim that left its queue after it was sorted: its position and what
// below counted for it.
type leftVictim struct {
	pos int32
	use vec
}

// victimHold is what one placement of a victim holds, and where.
type victimHold struct {
	node int32
	use  vec
}

// victimKey is what eviction order compares, copied out of the job so that the sort reads
// one small array instead of 100k scattered jobs.
type victimKey struct {
	prio, start int64
	job         int32
}

// victimsOf lists partition p's running preemptible work by queue, the queue most over its
// fair share first. Reclaim walks only queues that may give, preempt only its own.
func (c *cycle) victimsOf(p int32) []victimQueue {
	if c.victims[p] != nil {
		return c.victims[p]
	}
	isVictim := func(js *jobState) bool {
		return js.part == p && js.queue >= 0 && js.preempt && !js.evicted && js.running > 0
	}
	// Count per queue, then cut every queue's list from one array: no list grows.
	count := make([]int32, len(c.queues))
	total := 0
	for ji := range c.jobs {
		if js := &c.jobs[ji]; isVictim(js) {
			count[js.queue]++
			total++
		}
	}
	vqs := []victimQueue{}
	slot := make([]int32, len(c.queues))
	all := make([]int32, total)
	for q, n := range count {
		if n > 0 {
			slot[q] = int32(len(vqs))
			vqs = append(vqs, victimQueue{queue: int32(q), jobs: all[:0:n]})
			all = all[n:]
		}
	}
	for ji := range c.jobs {
		if js := &c.jobs[ji]; isVictim(js) {
			vq := &vqs[slot[js.queue]]
			vq.jobs = append(vq.jobs, int32(ji))
		}
	}
	slices.SortFunc(vqs, func(a, b victimQueue) int {
		if ra, rb := c.qpart(a.queue, p).ratio, c.qpart(b.queue, p).ratio; ra != rb {
			return cmp.Compare(rb, ra)
		}
		return cmp.Compare(a.queue, b.queue)
	})
	c.victims[p] = vqs
	return vqs
}

// inEvictionOrder returns the queue's victims in eviction order, sorting them the first time.
// Priority and start are fixed for the cycle, so sorting late gives the order sorting early
// would have.
func (c *cycle) inEvictionOrder(vq *victimQueue) []int32 {
	if vq.sorted {
		return vq.jobs
	}
	keys := c.buf.victimKeys[:0]
	for _, v := range vq.jobs {
		keys = append(keys, victimKey{c.jobs[v].prio, c.jobs[v].start, v})
	}
	slices.SortFunc(keys, func(a, b victimKey) int {
		if a.prio != b.prio {
			return cmp.Compare(a.prio, b.prio)
		}
		if a.start != b.start {
			return cmp.Compare(b.start, a.start)
		}
		return c.idOrder(a.job, b.job)
	})
	for i, k := range keys {
		vq.jobs[i] = k.job
	}
	c.buf.victimKeys = keys
	// Appended to arenas kept across cycles; a list cut before an arena grew keeps the old
	// array, which nothing writes again.
	start, startAt := len(c.holds), len(c.holdsAt)
	c.holdsAt = append(c.holdsAt, 0)
	for _, v := range vq.jobs {
		for _, pi := range c.jobs[v].places {
			c.holds = append(c.holds, victimHold{c.places[pi].node, c.places[pi].use})
		}
		c.holdsAt = append(c.holdsAt, int32(len(c.holds)-start))
	}
	vq.held = c.holds[start:len(c.holds):len(c.holds)]
	vq.heldAt = c.holdsAt[startAt:len(c.holdsAt):len(c.holdsAt)]
	if c.victimPos == nil {
		c.victimPos = reuse(c.buf.victimPos, len(c.jobs))
		c.buf.victimPos = c.victimPos
	}
	startBelow := len(c.belows)
	sum := vec{}
	c.belows = append(c.belows, sum)
	for i, v := range vq.jobs {
		if vj := &c.jobs[v]; !vj.evicted && !vj.grew {
			sum.add(vj.use)
			c.victimPos[v] = int32(i + 1)
		}
		c.belows = append(c.belows, sum)
	}
	vq.below = c.belows[startBelow:len(c.belows):len(c.belows)]
	vq.sorted = true
	return vq.jobs
}

// holdingBelow sums what the first k jobs in eviction order hold now, leaving out those
// evicted or grown.
func (vq *victimQueue) holdingBelow(k int) vec {
	sum := vq.below[k]
	for _, l := range vq.left {
		if int(l.pos) < k {
			sum.sub(l.use)
		}
	}
	return sum
}

// leaveVictims notes the jobs a commit took out of the victim lists for good: the victims it
// evicted and the job that grew.
func (c *cycle) leaveVictims(at *attempt, ji int32) {
	if c.victimPos == nil {
		return // no queue sorted yet: each will see the flags when it is
	}
	for _, v := range at.victims {
		c.leaveVictim(v)
	}
	c.leaveVictim(ji)
}

func (c *cycle) leaveVictim(v int32) {
	pos := c.victimPos[v] - 1
	if pos < 0 {
		return // in no sorted queue, or counted out already
	}
	c.victimPos[v] = 0
	js := &c.jobs[v]
	vqs := c.victims[js.part]
	vq := &vqs[slices.IndexFunc(vqs, func(vq victimQueue) bool { return vq.queue == js.queue })]
	use := vq.below[pos+1]
	use.sub(vq.below[pos])
	vq.left = append(vq.left, leftVictim{pos, use})
}

// idOrder compares two jobs by id, then by position for ids given twice. When the snapshot
// lists its jobs by id, their positions say the same without reading any string.
func (c *cycle) idOrder(a, b int32) int {
	if !c.jobsByID {
		if d := strings.Compare(c.jobs[a].job.ID, c.jobs[b].job.ID); d != 0 {
			return d
		}
	}
	return cmp.Compare(a, b)
}

// listedByID reports whether the snapshot lists its jobs in id order.
func listedByID(jobs []Job) bool {
	for i := 1; i < len(jobs); i++ {
		if jobs[i].ID < jobs[i-1].ID {
			return false
		}
	}
	return true
}
