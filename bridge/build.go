package bridge

import (
	"cmp"
	"slices"
	"strings"
)

// newCycle turns a snapshot into indexed working state, applying every running task.
func newCycle(s *Snapshot, b *buffers) *cycle {
	c := &cycle{s: s, d: &Decisions{}, now: nanos(s.Now), users: map[userKey]*userUsage{}, building: true, buf: b, binds: b.binds[:0], carry: &b.carry}
	c.buildPartitions()
	c.buildNodes()
	c.buildAdvanceReservations()
	c.buildNodeSets()
	c.buildScores()
	c.buildSelectors()
	c.buildQueues()
	c.buildQOS()
	c.buildJobs()
	c.applyForeignGPUs()
	c.building = false
	for n := range c.nodes {
		c.refreshNode(int32(n))
	}
	for _, u := range s.Usage {
		q, okq := c.queueIdx[u.Queue]
		p, okp := c.partIdx[u.Partition]
		if !okq || !okp {
			c.problem("usage "+u.Queue+"/"+u.Partition, "unknown queue or partition; usage ignored")
			continue
		}
		c.qpart(q, p).usage = u.Usage.vec()
	}
	return c
}

// sortedByName returns the indices of items ordered by name, so that the cycle never
// depends on the order the caller listed them in.
func sortedByName(n int, name func(int) string) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(name(a), name(b)) })
	return idx
}

func set(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func (c *cycle) buildPartitions() {
	ps := c.s.Partitions
	c.partIdx = make(map[string]int32, len(ps))
	for _, i := range sortedByName(len(ps), func(i int) string { return ps[i].Name }) {
		p := &ps[i]
		if _, dup := c.partIdx[p.Name]; dup {
			c.problem("partition "+p.Name, "defined twice; the second is ignored")
			continue
		}
		st := p.Placement
		if st != Spread {
			st = Binpack
		}
		c.partIdx[p.Name] = int32(len(c.parts))
		c.parts = append(c.parts, partState{name: p.Name, src: int32(i), strategy: st, allowQ: set(p.AllowedQueues),
			allowQOS: set(p.AllowedQOS), reservedBy: -1})
	}
}

func (c *cycle) buildNodes() {
	ns := c.s.Nodes
	c.nodeIdx = c.buf.nodeIdx
	if c.nodeIdx == nil {
		c.nodeIdx = make(map[string]int32, len(ns))
	}
	clear(c.nodeIdx)
	c.nodes = reuse(c.buf.nodes, len(ns))[:0]
	c.gpus = reuse(c.buf.gpus, len(ns)*8)[:0]
	for _, i := range sortedByName(len(ns), func(i int) string { return ns[i].Name }) {
		n := &ns[i]
		p, ok := c.partIdx[n.Partition]
		if !ok {
			c.problem("node "+n.Name, "partition "+n.Partition+" is not defined; node ignored")
			continue
		}
		if _, dup := c.nodeIdx[n.Name]; dup {
			c.problem("node "+n.Name, "listed twice; the second is ignored")
			continue
		}
		idx := int32(len(c.nodes))
		c.nodeIdx[n.Name] = idx
		c.nodes = append(c.nodes, c.nodeState(n, p))
		ps := &c.parts[p]
		ps.nodes = append(ps.nodes, idx)
		nd := &c.nodes[idx]
		if nd.schedulable {
			ps.capacity.add(nd.capacity)
			ps.free[DimCPU] += nd.capacity[DimCPU]
			ps.free[DimMemory] += nd.capacity[DimMemory]
			ps.maxGPUs = max(ps.maxGPUs, nd.gn-nd.g0)
		}
		for g := nd.g0; g < nd.gn; g++ {
			if !c.gpus[g].unhealthy {
				ps.maxGPUMem = max(ps.maxGPUMem, c.gpus[g].mem)
			}
		}
	}
	for p := range c.parts {
		c.parts[p].whole = newBucketSet(int(c.parts[p].maxGPUs)+1, len(c.nodes))
		c.parts[p].room = newBucketSet(10, len(c.nodes))
	}
	for n := range c.nodes {
		c.refreshNode(int32(n))
	}
}

func (c *cycle) nodeState(n *Node, p int32) nodeState {
	nd := nodeState{name: n.Name, part: p, labels: n.Labels, schedulable: !n.Unschedulable, reservedBy: -1, exclusive: -1}
	nd.g0 = int32(len(c.gpus))
	if len(n.GPUs) == 0 && n.Allocatable.GPUMilli >= 1000 {
		k := min(n.Allocatable.GPUMilli/1000, maxDevices)
		for i := range k {
			c.gpus = append(c.gpus, gpuState{index: int32(i), mem: n.Allocatable.GPUMemoryMiB / k})
		}
	}
	for _, g := range n.GPUs {
		c.gpus = append(c.gpus, gpuState{index: g.Index, uuid: g.UUID, mem: g.MemoryMiB, unhealthy: g.Unhealthy, mig: g.MIG})
	}
	nd.gn = int32(len(c.gpus))
	devs := c.gpus[nd.g0:nd.gn]
	slices.SortFunc(devs, func(a, b gpuState) int { return cmp.Compare(a.index, b.index) })
	for i := range devs {
		if i > 0 && devs[i].index == devs[i-1].index {
			c.problem("node "+n.Name, "GPU index listed twice; the second is treated as unhealthy")
			devs[i].unhealthy = true
		}
		if devs[i].mig {
			nd.mig = true
		}
		if !devs[i].unhealthy {
			nd.capWhole++
			nd.capacity[DimGPU] += 1000
			nd.capacity[DimGPUMemory] += devs[i].mem
		}
	}
	nd.capacity[DimCPU] = n.Allocatable.CPUMilli - n.Used.CPUMilli
	nd.capacity[DimMemory] = n.Allocatable.MemoryBytes - n.Used.MemoryBytes
	nd.free[DimCPU], nd.free[DimMemory] = nd.capacity[DimCPU], nd.capacity[DimMemory]
	if len(n.Allocatable.Extended) > 0 {
		if c.extIdx == nil {
			c.extIdx = map[string]int32{}
		}
		for _, q := range n.Allocatable.Extended {
			c.internExt(q.Name)
		}
		nd.ext = make([]int64, len(c.extIdx))
		for _, q := range n.Allocatable.Extended {
			nd.ext[c.extIdx[q.Name]] += q.Value
		}
		for _, q := range n.Used.Extended {
			if i, ok := c.extIdx[q.Name]; ok {
				nd.ext[i] -= q.Value
			}
		}
	}
	return nd
}

func (c *cycle) internExt(name string) int32 {
	i, ok := c.extIdx[name]
	if !ok {
		i = int32(len(c.extIdx))
		c.extIdx[name] = i
	}
	return i
}

func (c *cycle) buildQueues() {
	qs := c.s.Queues
	c.queueIdx = make(map[string]int32, len(qs))
	var parents []string
	for _, i := range sortedByName(len(qs), func(i int) string { return qs[i].Name }) {
		q := &qs[i]
		if _, dup := c.queueIdx[q.Name]; dup {
			c.problem("queue "+q.Name, "defined twice; the second is ignored")
			continue
		}
		c.queueIdx[q.Name] = int32(len(c.queues))
		c.queues = append(c.queues, queueState{name: q.Name, parent: -1, priority: q.Priority, quotas: q.Quotas})
		parents = append(parents, q.Parent)
	}
	for i := range c.queues {
		q := &c.queues[i]
		parent := parents[i]
		if parent == "" {
			continue
		}
		p, ok := c.queueIdx[parent]
		if !ok {
			c.problem("queue "+q.name, "parent "+parent+" is not defined; treated as a top-level queue")
			continue
		}
		q.parent = p
	}
	for i := range c.queues {
		c.queues[i].path = c.pathOf(int32(i))
	}
	for i := range c.queues {
		q := &c.queues[i]
		if q.parent >= 0 {
			c.queues[q.parent].children = append(c.queues[q.parent].children, int32(i))
		} else {
			c.roots = append(c.roots, int32(i))
		}
	}
	c.qp = make([]queuePart, len(c.queues)*len(c.parts))
	for i := range c.qp {
		c.qp[i].weight = [numDims]float64{1, 1, 1, 1}
	}
	for i := range c.queues {
		for _, pq := range c.queues[i].quotas {
			p, ok := c.partIdx[pq.Partition]
			if !ok {
				c.problem("queue "+c.queues[i].name, "quota for unknown partition "+pq.Partition+" ignored")
				continue
			}
			qp := c.qpart(int32(i), p)
			for d := range numDims {
				if rq := pq.dim(Dim(d)); rq != (ResourceQuota{}) {
					qp.quota[d], qp.limit[d], qp.weight[d] = rq.Quota, rq.Limit, rq.OverQuotaWeight
				}
			}
		}
	}
}

// pathOf returns the queues from q's root down to q, breaking a parent cycle at q.
func (c *cycle) pathOf(q int32) []int32 {
	var up []int32
	for x := q; x >= 0; x = c.queues[x].parent {
		if slices.Contains(up, x) {
			c.problem("queue "+c.queues[q].name, "parent chain loops; treated as a top-level queue")
			c.queues[q].parent = -1
			return []int32{q}
		}
		up = append(up, x)
	}
	slices.Reverse(up)
	return up
}

func (c *cycle) buildQOS() {
	c.qosIdx = make(map[string]int32, len(c.s.QOS))
	for i := range c.s.QOS {
		q := &c.s.QOS[i]
		if _, dup := c.qosIdx[q.Name]; dup {
			c.problem("qos "+q.Name, "defined twice; the second is ignored")
			continue
		}
		c.qosIdx[q.Name] = int32(len(c.qos))
		c.qos = append(c.qos, qosState{q: q})
	}
}
