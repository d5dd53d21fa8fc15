package bridge

import (
	"slices"
	"strings"
)

// Schedule runs one cycle over a snapshot and returns what should change. It is a pure
// function of the snapshot: the same snapshot always gives the same decisions.
func Schedule(s *Snapshot) *Decisions {
	return new(Scheduler).Schedule(s)
}

// Scheduler runs cycles one after another, reusing its working memory between them and
// carrying unchanged jobs' running tasks over (see Snapshot); the decisions are the same as
// Schedule's. It is not safe for concurrent use.
type Scheduler struct {
	buf buffers
}

// Schedule runs one cycle; see the package function. The returned decisions share nothing
// with the Scheduler and stay valid after the next cycle.
func (sc *Scheduler) Schedule(s *Snapshot) *Decisions {
	c := newCycle(s, &sc.buf)
	defer sc.buf.keep(c)
	c.evictStaleGangs()
	c.buildPending()
	c.divideFairShare()
	for p := range c.parts {
		c.allocate(int32(p))
	}
	c.allocateDeferred()
	c.rescue()
	c.reportBinds()
	c.reportPending()
	c.reportShares()
	c.d.Yields = yields(s.Nodes, c.d.Binds)
	return c.d
}

// yields lists the yielding tasks on the nodes the binds go to: a job never waits for an
// idle-node validation, it takes the node and the validation is preempted.
func yields(nodes []Node, binds []Bind) []Yield {
	var on map[string][]string
	for i := range nodes {
		if len(nodes[i].Yielding) > 0 {
			if on == nil {
				on = map[string][]string{}
			}
			on[nodes[i].Name] = nodes[i].Yielding
		}
	}
	if on == nil {
		return nil
	}
	var out []Yield
	for _, b := range binds {
		for _, task := range on[b.Node] {
			out = append(out, Yield{Node: b.Node, Task: task, ForJob: b.Job})
		}
		delete(on, b.Node) // once per node
	}
	return out
}

// reportPending explains every job that still waits with nothing running: those considered,
// in the order they were, then those that could not be considered at all, by id. (A running
// gang that could not grow is running, not pending.)
func (c *cycle) reportPending() {
	n := 0 // every job listed below, so that the list is allocated once
	for ji := range c.jobs {
		if js := &c.jobs[ji]; js.code != "" && js.running == 0 && (js.listed || js.pending > 0) {
			n++
		}
	}
	if n > 0 {
		c.d.Pending = make([]Pending, 0, n)
	}
	for _, ji := range c.order {
		js := &c.jobs[ji]
		if js.code != "" && js.running == 0 {
			c.d.Pending = append(c.d.Pending, Pending{Job: js.job.ID, Code: js.code, Reason: js.reason})
		}
	}
	start := len(c.d.Pending)
	for ji := range c.jobs {
		js := &c.jobs[ji]
		if js.code != "" && js.pending > 0 && js.running == 0 && !js.listed {
			c.d.Pending = append(c.d.Pending, Pending{Job: js.job.ID, Code: js.code, Reason: js.reason})
		}
	}
	if !c.jobsByID { // otherwise listed in id order already
		slices.SortStableFunc(c.d.Pending[start:], func(a, b Pending) int { return strings.Compare(a.Job, b.Job) })
	}
	// A gang that reserved nodes and then got in by eviction needs its reservation no more.
	c.d.Reservations = slices.DeleteFunc(c.d.Reservations, func(r Reservation) bool {
		return c.jobs[c.parts[c.partIdx[r.Partition]].reservedBy].code == ""
	})
}

// reportShares lists each queue's standing in each partition where it has anything.
func (c *cycle) reportShares() {
	for p := range c.parts {
		for q := range c.queues {
			qp := c.qpart(int32(q), int32(p))
			if qp.quota == (vec{}) && qp.fair == (vec{}) && qp.alloc == (vec{}) && qp.request == (vec{}) {
				continue
			}
			c.d.Shares = append(c.d.Shares, QueueShare{Queue: c.queues[q].name, Partition: c.parts[p].name,
				Deserved: qp.quota.resources(), FairShare: qp.fair.resources(),
				Allocated: qp.alloc.resources(), Requested: qp.request.resources()})
		}
	}
}
