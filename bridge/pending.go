package bridge

import (
	"slices"
	"strconv"
)

// jobBefore orders jobs inside a queue: priority (with aging), then submit time, then id.
func (c *cycle) jobBefore(a, b int32) int {
	ja, jb := &c.jobs[a], &c.jobs[b]
	if ja.prio != jb.prio {
		if ja.prio > jb.prio {
			return -1
		}
		return 1
	}
	if d := ja.job.SubmitTime.Compare(jb.job.SubmitTime); d != 0 {
		return d
	}
	return c.idOrder(a, b)
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
		p.pending[s].jobs = append(p.pending[s].jobs, int32(ji))
		c.qpart(js.queue, js.part).request.add(js.need)
		js.shape = c.shapeOf(js)
		js.listed = true
	}
	for p := range c.parts {
		ps := &c.parts[p]
		slices.SortFunc(ps.pending, func(a, b leafPending) int { return int(a.queue - b.queue) })
		for i := range ps.pending {
			slices.SortFunc(ps.pending[i].jobs, c.jobBefore)
		}
	}
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
