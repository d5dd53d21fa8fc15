package bridge

import (
	"cmp"
	"slices"
	"strconv"
)

// NodeSet is a list of nodes that task groups may use at all. The adapter computes one per
// distinct set of constraints (a pod template's node affinity and tolerations, a Slurm job's
// --constraint, -w and -x) and every group with those constraints names it, so matching is
// paid once per class of tasks, not once per task and cycle.
type NodeSet struct {
	Name  string   `json:"name" yaml:"name"`
	Nodes []string `json:"nodes" yaml:"nodes"`
	// Constraint says in a user's words what chose the nodes (for example "node affinity
	// topology.kubernetes.io/zone in (a)"); why-pending quotes it.
	Constraint string `json:"constraint,omitempty" yaml:"constraint,omitempty"`
}

// Placement is what a job asks of its tasks' nodes taken together.
type Placement struct {
	// RequiredLevel is a topology level (a node label key): every task of the job runs on
	// nodes with one and the same value of it. Nodes without the label are not used.
	RequiredLevel string `json:"requiredLevel,omitempty" yaml:"requiredLevel,omitempty"`
	// PreferredLevel packs the job into one domain of this level when one has room, else
	// into one domain of the next outer level of the partition's Topology, and so on out
	// to RequiredLevel (or anywhere when none is required).
	PreferredLevel string `json:"preferredLevel,omitempty" yaml:"preferredLevel,omitempty"`
	// OnePerNode puts at most one of the job's tasks on any node.
	OnePerNode bool `json:"onePerNode,omitempty" yaml:"onePerNode,omitempty"`
	// Exclusive gives the job whole nodes: it goes only on nodes with no task of another job
	// in the snapshot, and no other job's task joins it there.
	Exclusive bool `json:"exclusive,omitempty" yaml:"exclusive,omitempty"`
	// Spread keeps the job's tasks even over the domains of a level (see SpreadRule).
	Spread []SpreadRule `json:"spread,omitempty" yaml:"spread,omitempty"`
	// Affinity places the job next to (or away from) the tasks of other jobs, by their
	// labels (see AffinityRule and placement_affinity.go).
	Affinity []AffinityRule `json:"affinity,omitempty" yaml:"affinity,omitempty"`
}

// SpreadRule is kube-scheduler's topology spread with whenUnsatisfiable DoNotSchedule,
// counting the job's own tasks: a task may go to a domain only if afterwards that domain
// holds at most MaxSkew more of them than the emptiest domain. The domains are those of
// the nodes the task's node set allows (all nodes of the partition without one); nodes
// without the label take none.
type SpreadRule struct {
	Level   string `json:"level" yaml:"level"`
	MaxSkew int32  `json:"maxSkew" yaml:"maxSkew"`
	// Selector, when set, counts every running task whose job's labels it matches (other
	// jobs' too, and the node's foreign pods), as kube-scheduler counts the pods its label
	// selector matches; unset, only the job's own tasks count.
	Selector *Selector `json:"selector,omitempty" yaml:"selector,omitempty"`
	// MinDomains, when more domains are wanted than the task's nodes have, takes the
	// emptiest domain's count as 0 (kube-scheduler's minDomains).
	MinDomains int32 `json:"minDomains,omitempty" yaml:"minDomains,omitempty"`
}

// nodeBits is a set of node indices.
type nodeBits []uint64

func (b nodeBits) has(n int32) bool { return b[n>>6]&(1<<(uint(n)&63)) != 0 }

func (b nodeBits) add(n int32) { b[n>>6] |= 1 << (uint(n) & 63) }

type nodeSetState struct {
	name, constraint string
	bits             nodeBits
}

// levelState is one topology level of the cycle: each node's domain (an index into names),
// -1 for a node without the label.
type levelState struct {
	key   string
	dom   []int32
	names []string
}

// jobTopo is a job's topology request, resolved to levels of the cycle.
type jobTopo struct {
	required int32 // level every task must share a domain of; -1 none
	// ladder lists the levels placement tries to pack into, innermost first; a final -1
	// means anywhere.
	ladder []int32
	// level and dom are the domain the attempt under way keeps to; level -1: none.
	level, dom int32
	spread     []spreadRule
}

type spreadRule struct{ level, maxSkew, sel, minDomains int32 }

// maxDomainTries bounds how many domains of a preferred level a gang tries in one attempt:
// each try scans the partition, and a gang that finds none falls back to the next outer
// level. A required level has no fallback, so every domain with room is tried.
const maxDomainTries = 32

// buildNodeSets turns the snapshot's node sets into bit sets over the cycle's nodes. A name
// the cycle does not know (a node gone since the adapter listed it) is skipped.
func (c *cycle) buildNodeSets() {
	c.setIdx = nil
	c.sets = c.sets[:0]
	words := (len(c.nodes) + 63) / 64
	for _, ns := range c.s.NodeSets {
		if c.setIdx == nil {
			c.setIdx = map[string]int32{}
		}
		if _, dup := c.setIdx[ns.Name]; dup {
			c.problem("node set "+ns.Name, "defined twice; the second is ignored")
			continue
		}
		st := nodeSetState{name: ns.Name, constraint: ns.Constraint, bits: make(nodeBits, words)}
		for _, name := range ns.Nodes {
			if n, ok := c.nodeIdx[name]; ok {
				st.bits.add(n)
			}
		}
		c.setIdx[ns.Name] = int32(len(c.sets))
		c.sets = append(c.sets, st)
	}
}

// level returns the index of the topology level keyed by a node label, building it the
// first time a job asks for it.
func (c *cycle) level(key string) int32 {
	if i, ok := c.levelIdx[key]; ok {
		return i
	}
	if c.levelIdx == nil {
		c.levelIdx = map[string]int32{}
	}
	lv := levelState{key: key, dom: make([]int32, len(c.nodes))}
	ids := map[string]int32{}
	for n := range c.nodes {
		v, ok := c.nodes[n].labels[key]
		if !ok {
			lv.dom[n] = -1
			continue
		}
		id, seen := ids[v]
		if !seen {
			id = int32(len(lv.names))
			ids[v] = id
			lv.names = append(lv.names, v)
		}
		lv.dom[n] = id
	}
	i := int32(len(c.levels))
	c.levelIdx[key] = i
	c.levels = append(c.levels, lv)
	return i
}

// buildPlacement resolves a job's placement request and its groups' node sets.
func (c *cycle) buildPlacement(js *jobState) {
	pl := &js.job.Placement
	js.onePerNode, js.exclusive = pl.OnePerNode, pl.Exclusive
	js.constrained = pl.OnePerNode || pl.Exclusive || pl.RequiredLevel != "" || pl.PreferredLevel != ""
	for gi := js.g0; gi < js.gn; gi++ {
		g := &c.groups[gi]
		g.set, g.score = -1, -1
		if sc := js.job.Groups[gi-js.g0].NodeScore; sc != "" {
			if s, ok := c.scoreIdx[sc]; ok {
				g.score = s
			} else {
				js.block(ReasonBadConstraints, "group "+g.name+": node score "+sc+" is not in the snapshot")
			}
		}
		name := js.job.Groups[gi-js.g0].NodeSet
		if name == "" {
			continue
		}
		s, ok := c.setIdx[name]
		if !ok {
			js.block(ReasonBadConstraints, "group "+g.name+": node set "+name+" is not in the snapshot")
			continue
		}
		g.set = s
	}
	js.constrained = js.constrained || len(pl.Spread) > 0
	c.buildAffinity(js)
	js.topo = c.topoOf(js, pl)
}

// topoOf resolves a topology request of the job (its Placement, or an alternative's) in
// its partition (whose levels a preferred level falls back along); nil when it asks for
// none.
func (c *cycle) topoOf(js *jobState, pl *Placement) *jobTopo {
	required := pl.RequiredLevel
	if required == "" {
		required = selfAffinityLevel(js.job)
	}
	if required == "" && pl.PreferredLevel == "" && len(pl.Spread) == 0 {
		return nil
	}
	t := &jobTopo{required: -1, level: -1}
	for _, sp := range pl.Spread {
		sr := spreadRule{level: c.level(sp.Level), maxSkew: max(sp.MaxSkew, 1), sel: -1, minDomains: sp.MinDomains}
		if sp.Selector != nil {
			sr.sel = c.selector(sp.Selector, sp.Level, true)
		}
		t.spread = append(t.spread, sr)
	}
	if required != "" {
		t.required = c.level(required)
	}
	if pl.PreferredLevel != "" {
		t.ladder = append(t.ladder, c.level(pl.PreferredLevel))
		var outer []string
		if js.part >= 0 {
			levels := c.s.Partitions[c.parts[js.part].src].Topology
			if i := slices.Index(levels, pl.PreferredLevel); i >= 0 {
				outer = levels[:i]
			}
		}
		for k := len(outer) - 1; k >= 0 && pl.PreferredLevel != required; k-- {
			t.ladder = append(t.ladder, c.level(outer[k]))
			if outer[k] == required {
				break
			}
		}
	}
	switch {
	case t.required >= 0 && !slices.Contains(t.ladder, t.required):
		t.ladder = append(t.ladder, t.required)
	case t.required < 0:
		t.ladder = append(t.ladder, -1)
	}
	return t
}

// placeGang places a job's pending tasks as placeTasks does, keeping to its topology: each
// level of its ladder in turn, each domain of the level that could have room, until the
// gang fits in one. On failure the state is unchanged.
func (c *cycle) placeGang(at *attempt, ji int32, action Action) bool {
	t := c.jobs[ji].topo
	if t == nil {
		return c.placeTasks(at, ji, action)
	}
	for _, lv := range t.ladder {
		if lv < 0 {
			if c.placeTasks(at, ji, action) {
				return true
			}
			continue
		}
		doms := c.domainsToTry(ji, lv)
		if lv != t.required {
			doms = doms[:min(len(doms), maxDomainTries)]
		}
		for _, d := range doms {
			t.level, t.dom = lv, d
			ok := c.placeTasks(at, ji, action)
			t.level = -1
			if ok {
				return true
			}
		}
	}
	return false
}

// domainsToTry lists the domains of level lv whose free capacity could hold what the job
// still needs, the tightest first for binpack, the emptiest first for spread.
func (c *cycle) domainsToTry(ji, lv int32) []int32 {
	js := &c.jobs[ji]
	lev := &c.levels[lv]
	dim := DimGPU
	if js.need[DimGPU] == 0 {
		dim = DimCPU
	}
	room := make([]int64, len(lev.names))
	for _, n := range c.parts[js.part].nodes {
		if d := lev.dom[n]; d >= 0 && c.nodes[n].schedulable {
			room[d] += c.nodes[n].free[dim]
		}
	}
	var out []int32
	for d, r := range room {
		if r >= js.need[dim] {
			out = append(out, int32(d))
		}
	}
	spread := c.parts[js.part].strategy == Spread
	slices.SortStableFunc(out, func(a, b int32) int {
		if spread {
			return cmp.Compare(room[b], room[a])
		}
		return cmp.Compare(room[a], room[b])
	})
	return out
}

// placementAllows reports whether the job's own placement rules let one more task of group
// g go on node n: its node set, its topology, one task per node and exclusive nodes.
func (c *cycle) placementAllows(ji int32, g *groupReq, n int32) bool {
	js := &c.jobs[ji]
	nd := &c.nodes[n]
	if g.set >= 0 && !c.sets[g.set].bits.has(n) {
		return false
	}
	if nd.exclusive >= 0 && nd.exclusive != ji {
		return false
	}
	if js.exclusive && nd.tasks > 0 && nd.exclusive != ji {
		return false
	}
	if js.onePerNode && c.hasTaskOn(js, n) {
		return false
	}
	if js.aff != nil && !c.affinityAllows(js.aff, n) {
		return false
	}
	t := js.topo
	if t == nil {
		return true
	}
	if t.level >= 0 && c.levels[t.level].dom[n] != t.dom {
		return false
	}
	if t.required >= 0 {
		doms := c.levels[t.required].dom
		if doms[n] < 0 {
			return false
		}
		if first := c.firstLive(js); first >= 0 && doms[c.places[first].node] != doms[n] {
			return false
		}
	}
	for _, sp := range t.spread {
		if !c.spreadAllows(ji, g, sp, n) {
			return false
		}
	}
	return true
}

func (c *cycle) hasTaskOn(js *jobState, n int32) bool {
	if js.perNode != nil {
		return js.perNode[n] > 0
	}
	for _, pi := range js.places {
		if pl := &c.places[pi]; pl.live && pl.node == n {
			return true
		}
	}
	return false
}

// firstLive is the job's first placement that holds its node now, -1 when none does.
func (c *cycle) firstLive(js *jobState) int32 {
	for _, pi := range js.places {
		if c.places[pi].live {
			return pi
		}
	}
	return -1
}

// mayEverUse reports whether the job's node set and required topology let group g use node
// n at all, whatever runs there.
func (c *cycle) mayEverUse(js *jobState, g *groupReq, n int32) bool {
	if g.set >= 0 && !c.sets[g.set].bits.has(n) {
		return false
	}
	if js.aff != nil && !c.affinityEver(js.aff, n) {
		return false
	}
	return js.topo == nil || js.topo.required < 0 || c.levels[js.topo.required].dom[n] >= 0
}

// noteExclusive keeps which exclusive job holds a node as a placement of job ji comes (sign
// +1) or goes (-1).
func (c *cycle) noteExclusive(nd *nodeState, ji int32, sign int64) {
	nd.exclTasks += int32(sign)
	switch {
	case sign > 0:
		nd.exclusive = ji
	case nd.exclTasks == 0:
		nd.exclusive = -1
	}
}

// appendPlacementKey adds the job's placement rules to a shape key: jobs that differ in
// them place differently, so a failure of one says nothing about the other.
func (c *cycle) appendPlacementKey(b []byte, js *jobState) []byte {
	for gi := js.g0; gi < js.gn; gi++ {
		if s := c.groups[gi].set; s >= 0 {
			b = append(b, "|set"...)
			b = strconv.AppendInt(b, int64(s), 10)
		}
	}
	if js.onePerNode {
		b = append(b, "|one"...)
	}
	if js.exclusive {
		b = append(b, "|excl"...)
	}
	b = appendAffinityKey(b, js)
	b = c.appendResvKey(b, js)
	if t := js.topo; t != nil {
		for _, sp := range t.spread {
			b = append(b, "|spread"...)
			b = strconv.AppendInt(b, int64(sp.level), 10)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(sp.maxSkew), 10)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(sp.sel), 10)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(sp.minDomains), 10)
		}
		b = append(b, "|topo"...)
		b = strconv.AppendInt(b, int64(t.required), 10)
		for _, lv := range t.ladder {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(lv), 10)
		}
		if js.running > 0 {
			b = append(b, "|at"...) // a started gang keeps to its running tasks' domain
			b = append(b, js.job.ID...)
		}
	}
	return b
}

// perNodeAfter is how many placements a one-per-node job may have before it keeps a count
// per node: walking its placements for every node tried costs O(tasks) per node, which a
// job of a thousand nodes cannot pay.
const perNodeAfter = 16

// notePerNode keeps a large one-per-node job's count of live tasks per node as a placement
// of it comes (sign +1) or goes (-1).
func (c *cycle) notePerNode(js *jobState, n int32, sign int32) {
	if js.perNode == nil {
		if len(js.places) <= perNodeAfter {
			return
		}
		js.perNode = map[int32]int32{}
		for _, pi := range js.places {
			if pl := &c.places[pi]; pl.live { // the placement coming is live already, one going not
				js.perNode[pl.node]++
			}
		}
		return
	}
	js.perNode[n] += sign
}
