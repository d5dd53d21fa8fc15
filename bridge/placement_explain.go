package bridge

import (
	"fmt"
	"strings"
)

// explainPlacement says why a gang did not fit when its placement rules are the cause:
// BadConstraints when no node (or no domain) could ever take it, ReqNodeNotAvail when the
// only nodes it may use are unavailable, Resources when a domain it must keep to has no
// room now. It returns "" when the rules are not to blame.
func (c *cycle) explainPlacement(ji, gi int32) (string, string) {
	js := &c.jobs[ji]
	g := &c.groups[gi]
	ps := &c.parts[js.part]
	if g.set >= 0 {
		if code, reason := c.explainNodeSet(ji, gi); code != "" {
			return code, reason
		}
	}
	if code, reason := c.explainAffinity(ji, gi); code != "" {
		return code, reason
	}
	if js.onePerNode {
		ever := int32(0)
		for _, n := range ps.nodes {
			if c.couldEverHold(n, ji, gi) {
				ever++
			}
		}
		if want := js.pending + js.running; ever < want {
			return ReasonBadConstraints, fmt.Sprintf("needs its %d tasks on %d different nodes; only %d nodes of partition %s could ever hold one",
				want, want, ever, ps.name)
		}
	}
	t := js.topo
	if t == nil || t.required < 0 {
		return "", ""
	}
	lev := &c.levels[t.required]
	room := make([]int64, len(lev.names))
	for _, n := range ps.nodes {
		if d := lev.dom[n]; d >= 0 && c.couldEverHold(n, ji, gi) {
			room[d] += c.tasksEver(ji, gi, n)
		}
	}
	want := int64(js.pending + js.running)
	fits := false
	for _, r := range room {
		fits = fits || r >= want
	}
	if !fits {
		return ReasonBadConstraints, fmt.Sprintf("no %s domain of partition %s can ever hold all %d tasks of the job together (required topology level %s)",
			lev.key, ps.name, want, lev.key)
	}
	return ReasonResources, fmt.Sprintf("needs %d tasks of %s together in one %s domain of partition %s; none has room now",
		js.pending, describeTask(g), lev.key, ps.name)
}

// explainNodeSet explains a group whose node set leaves it nowhere to go.
func (c *cycle) explainNodeSet(ji, gi int32) (string, string) {
	js := &c.jobs[ji]
	g := &c.groups[gi]
	ps := &c.parts[js.part]
	st := &c.sets[g.set]
	cons := st.constraint
	if cons == "" {
		cons = "node set " + st.name
	}
	matching, ever := 0, false
	var down []string
	for _, n := range ps.nodes {
		if !st.bits.has(n) {
			continue
		}
		matching++
		if !c.nodes[n].schedulable {
			down = append(down, c.nodes[n].name)
		} else if c.couldEverHold(n, ji, gi) {
			ever = true
		}
	}
	switch {
	case matching == 0:
		return ReasonBadConstraints, fmt.Sprintf("no node of partition %s matches %s", ps.name, cons)
	case len(down) == matching:
		if len(down) > 5 {
			down = append(down[:5], "...")
		}
		return ReasonReqNodeNotAvail, fmt.Sprintf("the nodes matching %s are unavailable (cordoned, drained or tainted): %s",
			cons, strings.Join(down, ", "))
	case !ever:
		return ReasonBadConstraints, fmt.Sprintf("no node of partition %s matching %s can ever hold a task of %s", ps.name, cons, describeTask(g))
	}
	return "", ""
}

// tasksEver is how many tasks of group gi node n could hold when empty.
func (c *cycle) tasksEver(ji, gi, n int32) int64 {
	if c.jobs[ji].onePerNode {
		return 1
	}
	g, nd := &c.groups[gi], &c.nodes[n]
	k := int64(maxTasks)
	if g.gpu.Kind == GPUWhole {
		k = int64(nd.capWhole / g.gpu.Devices)
	}
	if g.base[DimCPU] > 0 {
		k = min(k, nd.capacity[DimCPU]/g.base[DimCPU])
	}
	if g.base[DimMemory] > 0 {
		k = min(k, nd.capacity[DimMemory]/g.base[DimMemory])
	}
	return k
}
