package bridge

// A Scheduler carries each job's resolved running tasks from one cycle to the next, so that
// a cycle over 130k running tasks does not look every one of them up again (its group by
// name, its node by name, its devices by index: cache misses over the caller's scattered
// RunningTask slices, much of the state build; measured: docs/benchmarks.md, Scheduling
// core). A job's tasks are taken over when the snapshot hands the job the same Running and
// Groups slices as last cycle (the same arrays and lengths: Snapshot's contract is that a
// changed job gets new slices) and the nodes and devices are laid out as they were.
// Anything else is resolved from the snapshot, as a fresh Scheduler does; what is taken
// over is applied exactly as a resolved task is, so the decisions are the same either way.

// carriedJob is what the last cycle resolved of one job's running tasks.
type carriedJob struct {
	id      string
	running *RunningTask // &Running[0]; nil: nothing carried
	groups  *TaskGroup   // &Groups[0]
	nRun    int32
	nGroups int32
	g0      int32 // its first group in that cycle's groups
	p0      int32 // its running tasks' placements, nRun of them from here, in that cycle's places
	// chargedWhole is Placement.Exclusive && OnePerNode then: such a task is charged its
	// node's capacity (addPlacement).
	chargedWhole bool
}

// nodeLayout and gpuLayout are what a resolved placement depends on of its node and devices.
type nodeLayout struct {
	name     string
	g0, gn   int32
	capacity vec
}

type gpuLayout struct {
	index int32
	mem   int64
}

// carry is the state a Scheduler keeps between cycles for taking running tasks over.
type carry struct {
	jobs   []carriedJob // by the last snapshot's job position
	places []placement  // the last cycle's placements and device references
	refs   []int32
	nodes  []nodeLayout
	gpus   []gpuLayout
	// A job is looked for at its position, then shifted by the distance the last job found
	// had moved (jobs added or gone earlier in the list move the rest by as many), then in
	// byRunning, built on the first job found neither way in a cycle.
	shift     int32
	byRunning map[*RunningTask]int32
	// usable is set for the cycle under way when the nodes and devices are laid out as
	// they were when jobs were carried.
	usable bool
	// next collects this cycle's carried jobs.
	next []carriedJob
	// taken and resolved count this cycle's running tasks taken over and looked up.
	taken, resolved int
}

// startCycle checks the new cycle's node and device layout against the carried one; it is
// called once the nodes are built.
func (k *carry) startCycle(c *cycle) {
	k.taken, k.resolved = 0, 0
	k.byRunning, k.shift = nil, 0
	k.usable = len(k.jobs) > 0 && len(k.nodes) == len(c.nodes) && len(k.gpus) == len(c.gpus)
	if k.usable {
		for i := range c.nodes {
			nd, was := &c.nodes[i], &k.nodes[i]
			if nd.name != was.name || nd.g0 != was.g0 || nd.gn != was.gn || nd.capacity != was.capacity {
				k.usable = false
				break
			}
		}
	}
	if k.usable {
		for i := range c.gpus {
			if c.gpus[i].index != k.gpus[i].index || c.gpus[i].mem != k.gpus[i].mem {
				k.usable = false
				break
			}
		}
	}
	if !k.usable {
		k.nodes = k.nodes[:0]
		for i := range c.nodes {
			nd := &c.nodes[i]
			k.nodes = append(k.nodes, nodeLayout{name: nd.name, g0: nd.g0, gn: nd.gn, capacity: nd.capacity})
		}
		k.gpus = k.gpus[:0]
		for i := range c.gpus {
			k.gpus = append(k.gpus, gpuLayout{index: c.gpus[i].index, mem: c.gpus[i].mem})
		}
	}
	k.next = reuse(k.next, len(c.s.Jobs))
}

// find returns the carried entry of job ji, nil when its running tasks must be resolved.
func (k *carry) find(ji int32, j *Job) *carriedJob {
	if !k.usable || len(j.Running) == 0 || len(j.Groups) == 0 {
		return nil
	}
	run := &j.Running[0]
	if cj, ok := k.near(ji, j.ID); ok {
		if cj.running != run {
			return nil // the job changed
		}
		return k.match(cj, j)
	}
	if k.byRunning == nil {
		k.byRunning = make(map[*RunningTask]int32, len(k.jobs))
		for i := range k.jobs {
			if k.jobs[i].running != nil {
				k.byRunning[k.jobs[i].running] = int32(i)
			}
		}
	}
	if i, ok := k.byRunning[run]; ok {
		k.shift = i - ji
		return k.match(&k.jobs[i], j)
	}
	return nil
}

// near looks for the job with the given id at its position, then at the distance the
// last job found had moved, then a few places around it (a few jobs added or gone since).
func (k *carry) near(ji int32, id string) (*carriedJob, bool) {
	for _, d := range [...]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4} {
		for _, at := range [2]int32{ji + d, ji + k.shift + d} {
			if at >= 0 && int(at) < len(k.jobs) && k.jobs[at].id == id {
				k.shift = at - ji
				return &k.jobs[at], true
			}
		}
	}
	return nil, false
}

func (k *carry) match(cj *carriedJob, j *Job) *carriedJob {
	if cj.nRun != int32(len(j.Running)) || cj.groups != &j.Groups[0] || cj.nGroups != int32(len(j.Groups)) ||
		cj.chargedWhole != (j.Placement.Exclusive && j.Placement.OnePerNode) {
		return nil
	}
	return cj
}

// takeRunning applies job ji's carried running tasks, as placeRunning would have.
func (c *cycle) takeRunning(ji int32, cj *carriedJob) {
	k := c.carry
	js := &c.jobs[ji]
	for _, was := range k.places[cj.p0 : cj.p0+cj.nRun] {
		pl := placement{job: ji, group: was.group - cj.g0 + js.g0, node: was.node, whole: was.whole,
			milli: was.milli, mem: was.mem, use: was.use, task: was.task, start: was.start}
		pl.g0 = int32(len(c.gpuRefs))
		c.gpuRefs = append(c.gpuRefs, k.refs[was.g0:was.gn]...)
		pl.gn = int32(len(c.gpuRefs))
		c.places = append(c.places, pl)
		pi := int32(len(c.places) - 1)
		js.places = append(js.places, pi)
		c.groups[pl.group].running++
		js.running++
		if js.start == 0 || (pl.start != 0 && pl.start < js.start) {
			js.start = pl.start
		}
		c.apply(pi, +1)
	}
	k.taken += int(cj.nRun)
}

// noteRunning records what job ji's running tasks were resolved to, when each of them got
// a placement of its own devices (p0 is its first): a task that did not (an unknown node or
// group, devices taken without an index) is looked up again in every cycle.
func (k *carry) noteRunning(c *cycle, ji int32, p0 int32, clean bool) {
	j := &c.s.Jobs[ji]
	k.next[ji].id = j.ID // found at its place next cycle, carried or not
	if !clean || len(j.Running) == 0 || len(j.Groups) == 0 || int(p0)+len(j.Running) != len(c.places) {
		return
	}
	k.next[ji] = carriedJob{id: j.ID, running: &j.Running[0], groups: &j.Groups[0], nRun: int32(len(j.Running)),
		nGroups: int32(len(j.Groups)), g0: c.jobs[ji].g0, p0: p0,
		chargedWhole: j.Placement.Exclusive && j.Placement.OnePerNode}
}

// endCycle keeps this cycle's placements for the next one and hands back the last cycle's
// arrays for reuse.
func (k *carry) endCycle(c *cycle) (places []placement, refs []int32) {
	places, refs = k.places, k.refs
	k.places, k.refs = c.places, c.gpuRefs
	k.jobs, k.next = k.next, k.jobs
	return places, refs
}
