package bridge

import (
	"fmt"
)

func (c *cycle) buildJobs() {
	// Size the arenas once: growing them job by job would copy them over and over. Each
	// job's count of well-formed tasks is kept for the second pass.
	counts := reuse(c.buf.taskCounts, len(c.s.Jobs))
	c.buf.taskCounts = counts
	groups, tasks, refs := 0, 0, 0
	for i := range c.s.Jobs {
		j := &c.s.Jobs[i]
		groups += len(j.Groups)
		n := 0
		for k := range j.Groups {
			if g := &j.Groups[k]; checkGroup(g) == "" {
				n += int(g.Count)
				refs += int(g.Count) * int(max(g.GPU.Devices, 1))
			}
		}
		counts[i] = int32(n)
		tasks += n
	}
	c.groups = room(c.buf.groups, groups)
	c.places = room(c.buf.places, tasks+tasks/8)
	c.gpuRefs = room(c.buf.gpuRefs, refs+refs/8)
	c.jobs = reuse(c.buf.jobs, len(c.s.Jobs))
	c.jobsByID = listedByID(c.s.Jobs)
	c.carry.startCycle(c)
	// Every job's list of placements is cut from one array, room for all its tasks.
	c.buf.lists = reuse(c.buf.lists, tasks)
	lists := c.buf.lists
	for i, n := range counts {
		c.jobs[i].places, lists = lists[:0:n], lists[n:]
		c.buildJob(int32(i))
	}
}

// block marks a job as unable to run this cycle, keeping the first reason found.
func (js *jobState) block(code, reason string) {
	if js.code == "" {
		js.code, js.reason = code, reason
	}
}

func (g *groupReq) devices() int32 {
	if g.gpu.Kind == GPUMultiFraction || g.gpu.Kind == GPUWhole {
		return g.gpu.Devices
	}
	return 1
}

func (c *cycle) buildJob(ji int32) {
	j := &c.s.Jobs[ji]
	js := &c.jobs[ji]
	// Field by field: the slice is zeroed already, and a whole-struct store costs write
	// barriers for every pointer field, 140k times.
	js.job, js.queue, js.part, js.qos = j, -1, -1, -1
	js.prio, js.preempt = int64(j.Priority), j.Preemptible
	if p, ok := c.partIdx[j.Partition]; ok {
		js.part = p
	} else if len(j.Alternatives) == 0 { // else each alternative's partition is checked
		js.block(ReasonInvalidPartition, fmt.Sprintf("partition %q does not exist", j.Partition))
	}
	if q, ok := c.queueIdx[j.Queue]; !ok {
		js.block(ReasonInvalidAccount, fmt.Sprintf("queue %q does not exist", j.Queue))
	} else if kids := c.queues[q].children; len(kids) > 0 {
		js.block(ReasonInvalidAccount, fmt.Sprintf("queue %q has sub-queues (%s); submit to one of them", j.Queue, c.queues[kids[0]].name))
	} else {
		js.queue = q
	}
	if j.QOS != "" {
		if q, ok := c.qosIdx[j.QOS]; ok {
			js.qos = q
			qos := c.qos[q].q
			js.prio += int64(qos.Priority)
			js.preempt = js.preempt || qos.Preemptible
			if qos.MaxWall > 0 && j.TimeLimit > qos.MaxWall {
				js.block(ReasonQOSMaxWall, fmt.Sprintf("time limit %s is above the %s QOS %s allows", j.TimeLimit, qos.MaxWall, j.QOS))
			}
		} else {
			js.block(ReasonInvalidQOS, fmt.Sprintf("QOS %q does not exist", j.QOS))
		}
	}
	c.resvOf(js)
	if iv := c.s.Config.AgingInterval; iv > 0 && !j.SubmitTime.IsZero() && c.s.Now.After(j.SubmitTime) {
		js.prio += int64(c.s.Now.Sub(j.SubmitTime) / iv)
	}
	if len(j.Alternatives) == 0 {
		c.checkPartitionAccess(js)
	}
	c.buildGroups(js)
	c.buildPlacement(js)
	if len(j.Alternatives) > 0 {
		c.buildAlternatives(js)
	}
	p0, problems := int32(len(c.places)), len(c.d.Problems)
	c.unlisted = false
	if cj := c.carry.find(ji, j); cj != nil {
		c.takeRunning(ji, cj)
	} else {
		for i := range j.Running {
			c.placeRunning(ji, &j.Running[i])
		}
		c.carry.resolved += len(j.Running)
	}
	c.carry.noteRunning(c, ji, p0, len(c.d.Problems) == problems && !c.unlisted)
	for gi := js.g0; gi < js.gn; gi++ {
		g := &c.groups[gi]
		left := max(g.count-g.running, 0)
		js.pending += left
		js.need.add(scale(c.taskNeed(g, js.part), left))
	}
	total := c.taskCount(js)
	js.minMember = j.MinMember
	if js.minMember <= 0 || js.minMember > total {
		js.minMember = total
	}
}

func scale(v vec, k int32) vec {
	for d := range v {
		v[d] *= int64(k)
	}
	return v
}

// taskNeed estimates one task's usage before it has devices: a memory request counts as the
// portion it takes of the partition's largest device.
func (c *cycle) taskNeed(g *groupReq, part int32) vec {
	v := g.base
	switch g.gpu.Kind {
	case GPUWhole:
		v[DimGPU] = 1000 * int64(g.gpu.Devices)
	case GPUFraction, GPUMultiFraction:
		v[DimGPU] = int64(g.gpu.Milli) * int64(g.devices())
	case GPUMemory:
		v[DimGPUMemory] = g.gpu.MemoryMiB
		if part >= 0 && c.parts[part].maxGPUMem > 0 {
			m := c.parts[part].maxGPUMem
			v[DimGPU] = (g.gpu.MemoryMiB*1000 + m - 1) / m
		}
	}
	return v
}

func (c *cycle) checkPartitionAccess(js *jobState) {
	if js.part < 0 {
		return
	}
	p := &c.parts[js.part]
	if p.allowQOS != nil && !p.allowQOS[js.job.QOS] {
		js.block(ReasonQOSNotAllowed, fmt.Sprintf("partition %s does not allow QOS %q", p.name, js.job.QOS))
	}
	if p.allowQ == nil || js.queue < 0 {
		return
	}
	for _, q := range c.queues[js.queue].path {
		if p.allowQ[c.queues[q].name] {
			return
		}
	}
	js.block(ReasonAccountNotAllowed, fmt.Sprintf("partition %s does not allow queue %s", p.name, js.job.Queue))
}

func (c *cycle) buildGroups(js *jobState) {
	j := js.job
	js.g0 = int32(len(c.groups))
	if len(j.Groups) == 0 {
		js.block(ReasonBadConstraints, "job has no task groups")
	}
	for i := range j.Groups {
		tg := &j.Groups[i]
		g := groupReq{name: tg.Name, gpu: tg.GPU, count: tg.Count, names: tg.PendingTasks}
		g.base[DimCPU], g.base[DimMemory] = tg.Request.CPUMilli, tg.Request.MemoryBytes
		for _, q := range tg.Request.Extended {
			if c.extIdx == nil {
				c.extIdx = map[string]int32{}
			}
			g.ext = append(g.ext, extAmount{c.internExt(q.Name), q.Value})
		}
		if msg := checkGroup(tg); msg != "" {
			js.block(ReasonBadConstraints, "group "+tg.Name+": "+msg)
			g.malformed = true
		}
		c.groups = append(c.groups, g)
	}
	js.gn = int32(len(c.groups))
}

// Bounds on one request, so that a malformed one cannot make the cycle allocate without end.
const (
	maxTasks   = 1 << 20 // per task group
	maxDevices = 1 << 10 // GPUs per task, and devices of a node known from labels alone
)

// checkGroup returns what is wrong with a task group, "" when nothing.
func checkGroup(tg *TaskGroup) string {
	r := tg.GPU
	switch {
	case tg.Count <= 0 || tg.Count > maxTasks:
		return fmt.Sprintf("count must be between 1 and %d", maxTasks)
	case tg.GPU.Devices > maxDevices:
		return fmt.Sprintf("at most %d GPUs per task", maxDevices)
	case tg.Request.CPUMilli < 0 || tg.Request.MemoryBytes < 0:
		return "negative CPU or memory request"
	}
	switch r.Kind {
	case GPUNone:
		return ""
	case GPUWhole:
		if r.Devices < 1 {
			return "whole-GPU request needs devices >= 1"
		}
	case GPUFraction:
		if r.Milli < 1 || r.Milli > 999 {
			return "a GPU fraction must be between 0.001 and 0.999 (ask for whole GPUs otherwise)"
		}
	case GPUMemory:
		if r.MemoryMiB < 1 {
			return "a GPU memory request needs memoryMiB >= 1"
		}
	case GPUMultiFraction:
		if r.Devices < 1 || r.Milli < 1 || r.Milli > 1000 {
			return "a multi-device fraction needs devices >= 1 and a fraction between 0.001 and 1"
		}
	default:
		return fmt.Sprintf("unknown GPU request kind %q", r.Kind)
	}
	return ""
}
