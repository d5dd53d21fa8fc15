package bridge

import (
	"fmt"
	"slices"
	"sort"
)

// reclaim lets a queue under its fair share take capacity back from queues over theirs. Only
// preemptible work is taken, and never so much that a victim's queue (or any of its
// ancestors below the common one) drops below its own fair share, nor so much that the
// reclaiming queue's path rises above its share: so no eviction can later be reversed.
func (c *cycle) reclaim(ji int32) bool {
	js := &c.jobs[ji]
	p := js.part
	dims := governingDims(js.need)
	if !c.withinShare(js.queue, p, js.need, dims) || !c.reclaimable(js, dims) {
		return false
	}
	queues := c.giving[:0]
	vqs := c.victimsOf(p)
	for i := range vqs {
		if vq := &vqs[i]; vq.queue != js.queue && c.mayGive(js, vq.queue, vec{}, dims) {
			queues = append(queues, vq)
		}
	}
	c.giving = queues
	allowed := func(v int32) bool { return c.mayGive(js, c.jobs[v].queue, c.jobs[v].use, dims) }
	qname := c.queues[js.queue].name
	reason := func(v int32) string {
		return fmt.Sprintf("queue %s is over its fair share in partition %s; queue %s reclaims it for job %s",
			c.queues[c.jobs[v].queue].name, c.parts[p].name, qname, js.job.ID)
	}
	return c.evictFor(ji, ActionReclaim, EvictReclaim, queues, allowed, reason)
}

// mayGive reports whether leaf queue vq may lose take to job js's queue: every queue on
// the victim's side below the common ancestor stays at or above its fair share (strictly
// above it when take is zero, to ask whether the queue may give anything), and every queue
// on the reclaimer's side stays within its share.
func (c *cycle) mayGive(js *jobState, vq int32, take vec, dims []Dim) bool {
	p := js.part
	pa, pb := c.queues[js.queue].path, c.queues[vq].path
	i := 0
	for i < len(pa) && i < len(pb) && pa[i] == pb[i] {
		i++
	}
	for _, q := range pa[i:] {
		if !c.withinShare(q, p, js.need, dims) {
			return false
		}
	}
	for _, q := range pb[i:] {
		qp := c.qpart(q, p)
		for _, d := range dims {
			if qp.alloc[d]-take[d] < qp.fair[d] || (take == (vec{}) && qp.alloc[d] <= qp.fair[d]) {
				return false
			}
		}
	}
	return true
}

// reclaimable reports whether free capacity plus everything leaf queues hold above their
// fair share could cover the job: when not, no reclaim can, and no victim is looked at.
func (c *cycle) reclaimable(js *jobState, dims []Dim) bool {
	avail := c.parts[js.part].free
	for _, vq := range c.victimsOf(js.part) {
		qp := c.qpart(vq.queue, js.part)
		for _, d := range dims {
			avail[d] += max(qp.alloc[d]-qp.fair[d], 0)
		}
	}
	for _, d := range dims {
		if js.need[d] > avail[d] {
			return false
		}
	}
	return true
}

// withinShare reports whether queue q stays within its fair share in partition p after
// taking need.
func (c *cycle) withinShare(q, p int32, need vec, dims []Dim) bool {
	qp := c.qpart(q, p)
	for _, d := range dims {
		if need[d] > 0 && qp.alloc[d]+need[d] > qp.fair[d] {
			return false
		}
	}
	return true
}

// preempt lets a job evict lower-priority preemptible jobs of its own queue.
func (c *cycle) preempt(ji int32) bool {
	js := &c.jobs[ji]
	vqs := c.victimsOf(js.part)
	i := slices.IndexFunc(vqs, func(vq victimQueue) bool { return vq.queue == js.queue })
	if i < 0 {
		return false
	}
	allowed := func(v int32) bool { return c.jobs[v].prio < js.prio }
	// Free capacity plus everything the lower-priority jobs hold must cover the job, or no
	// victim is worth looking at. In eviction order they come first.
	vq := &vqs[i]
	order := c.inEvictionOrder(vq)
	lower := sort.Search(len(order), func(k int) bool { return !allowed(order[k]) })
	avail := c.parts[js.part].free
	avail.add(vq.holdingBelow(lower))
	for _, d := range governingDims(js.need) {
		if js.need[d] > avail[d] {
			return false
		}
	}
	reason := func(v int32) string {
		return fmt.Sprintf("preempted by higher-priority job %s (priority %d over %d) in queue %s",
			js.job.ID, js.prio, c.jobs[v].prio, c.queues[js.queue].name)
	}
	// Past the lower-priority victims nothing may be evicted, so the walk stops there: with
	// one queue to walk, going on could only end in the same failure.
	c.lowerView = *vq
	c.lowerView.jobs, c.lowerView.heldAt = vq.jobs[:lower], vq.heldAt[:lower+1]
	c.giving = append(c.giving[:0], &c.lowerView)
	return c.evictFor(ji, ActionPreempt, EvictPreempt, c.giving, allowed, reason)
}
