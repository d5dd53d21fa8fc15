package bridge

import (
	"cmp"
	"slices"
	"strconv"
)

// pendingKey is what orders jobs inside a queue: priority (with aging), then submit time
// (as Time.Compare would: seconds, then nanoseconds), then id. It is copied out of the jobs
// so that sorting 20k of them reads one small array.
type pendingKey struct {
	prio, sec int64
	nsec      int32
	job       int32
}

func (c *cycle) pendingKeyOf(ji int32) pendingKey {
	js := &c.jobs[ji]
	t := js.job.SubmitTime
	return pendingKey{prio: js.prio, sec: t.Unix(), nsec: int32(t.Nanosecond()), job: ji}
}

func (c *cycle) pendingBefore(a, b pendingKey) int {
	if a.prio != b.prio {
		return cmp.Compare(b.prio, a.prio)
	}
	if a.sec != b.sec {
		return cmp.Compare(a.sec, b.sec)
	}
	if a.nsec != b.nsec {
		return cmp.Compare(a.nsec, b.nsec)
	}
	return c.idOrder(a.job, b.job)
}

// buildPending lists every job with tasks to place per partition and leaf queue, in job
// order, and adds its demand to its queue's request.
func (c *cycle) buildPending() {
	slot := make([][]int32, len(c.parts))
	for ji := range c.jobs {
		js := &c.jobs[ji]
		if js.code != "" || js.evicted || js.pending == 0 {
			continue
		}
		if js.alts != nil {
			c.listAlternatives(js, func() { c.listPending(slot, int32(ji)) }) // alternatives.go
		} else {
			c.listPending(slot, int32(ji))
			js.shape = c.shapeOf(js)
		}
		js.listed = true
	}
	for p := range c.parts {
		ps := &c.parts[p]
		slices.SortFunc(ps.pending, func(a, b leafPending) int { return int(a.queue - b.queue) })
		for i := range ps.pending {
			jobs := ps.pending[i].jobs
			keys := c.buf.pendingKeys[:0]
			for _, ji := range jobs {
				keys = append(keys, c.pendingKeyOf(ji))
			}
			slices.SortFunc(keys, c.pendingBefore)
			for k := range keys {
				jobs[k] = keys[k].job
			}
			c.buf.pendingKeys = keys
		}
	}
}

// listPending adds a job to its partition's pending list of its queue, and its demand to
// the queue's request there; slot is each partition's list index per queue, -1: none yet.
func (c *cycle) listPending(slot [][]int32, ji int32) {
	js := &c.jobs[ji]
	if slot[js.part] == nil {
		slot[js.part] = make([]int32, len(c.queues))
		for i := range slot[js.part] {
			slot[js.part][i] = -1
		}
	}
	p := &c.parts[js.part]
	s := slot[js.part][js.queue]
	if s < 0 {
		s = int32(len(p.pending))
		slot[js.part][js.queue] = s
		p.pending = append(p.pending, leafPending{queue: js.queue})
	}
	p.pending[s].jobs = append(p.pending[s].jobs, ji)
	c.qpart(js.queue, js.part).request.add(js.need)
}

// shapeOf is a key equal for jobs whose pending gangs place identically but for the CPU and
// memory of a single group, which failure lookups compare by size (see fitsFailed).
func (c *cycle) shapeOf(js *jobState) int32 {
	b := c.keyBuf[:0]
	b = strconv.AppendInt(b, int64(js.minMember-js.running), 10)
	single := js.gn-js.g0 == 1
	for gi := js.g0; gi < js.gn; gi++ {
		g := &c.groups[gi]
		b = append(b, '|')
		b = append(b, g.gpu.Kind...)
		for _, v := range [...]int64{int64(g.count - g.running), int64(g.gpu.Devices), int64(g.gpu.Milli), g.gpu.MemoryMiB} {
			b = append(b, ',')
			b = strconv.AppendInt(b, v, 10)
		}
		if !single {
			b = append(b, ',')
			b = strconv.AppendInt(b, g.base[DimCPU], 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, g.base[DimMemory], 10)
		}
		for _, e := range g.ext {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(e.idx), 10)
			b = append(b, '=')
			b = strconv.AppendInt(b, e.v, 10)
		}
	}
	if len(js.job.NodeSelector) > 0 {
		keys := make([]string, 0, len(js.job.NodeSelector))
		for k := range js.job.NodeSelector {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = append(b, '|')
			b = append(b, k...)
			b = append(b, '=')
			b = append(b, js.job.NodeSelector[k]...)
		}
	}
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(js.job.TimeLimit), 10)
	b = c.appendPlacementKey(b, js)
	c.keyBuf = b
	return c.intern(b)
}

// intern returns a number from 1 on that stands for the string b holds, the same for equal
// strings all cycle: keys compare and hash as integers, and only a new one is allocated.
func (c *cycle) intern(b []byte) int32 {
	if id, ok := c.interned[string(b)]; ok {
		return id
	}
	if c.interned == nil {
		c.interned = map[string]int32{}
	}
	id := int32(len(c.interned) + 1)
	c.interned[string(b)] = id
	return id
}
