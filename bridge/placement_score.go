package bridge

// NodeScore ranks the nodes a task group prefers (kube-scheduler's preferred node affinity:
// the sum of the weights of the terms a node matches). Placement takes, among the nodes
// that fit, one with the highest score, and among those the one the partition's strategy
// picks. Nodes not listed score 0.
type NodeScore struct {
	Name   string           `json:"name" yaml:"name"`
	Scores map[string]int32 `json:"scores" yaml:"scores"`
}

type scoreState struct {
	of  []int32 // per node of the cycle
	max int32   // the highest score of any node: a node with it ends the search
}

// scored is the best node found so far by a scored search.
type scored struct{ node, score int32 }

// buildScores turns the snapshot's node scores into per-node arrays.
func (c *cycle) buildScores() {
	c.scores, c.scoreIdx = c.scores[:0], nil
	for _, ns := range c.s.NodeScores {
		if c.scoreIdx == nil {
			c.scoreIdx = map[string]int32{}
		}
		if _, dup := c.scoreIdx[ns.Name]; dup {
			c.problem("node score "+ns.Name, "defined twice; the second is ignored")
			continue
		}
		st := scoreState{of: make([]int32, len(c.nodes))}
		for name, s := range ns.Scores {
			if n, ok := c.nodeIdx[name]; ok && s > 0 {
				st.of[n] = s
				st.max = max(st.max, s)
			}
		}
		c.scoreIdx[ns.Name] = int32(len(c.scores))
		c.scores = append(c.scores, st)
	}
}

// pickScored is pickNode for a group with a node score: every node the strategy would try
// is looked at, unless one with the highest score fits first.
func (c *cycle) pickScored(at *attempt, ji, gi int32) int32 {
	c.best = scored{node: -1, score: -1}
	if n := c.pickUnscored(at, ji, gi); n >= 0 {
		return n
	}
	return c.best.node
}

// scanScored keeps the best-scoring node of list that fits; it returns a node only when it
// has the highest score there is, which ends the search.
func (c *cycle) scanScored(at *attempt, ji, gi int32, list []int32) int32 {
	st := &c.scores[c.groups[gi].score]
	for _, n := range list {
		s := st.of[n]
		if s <= c.best.score || !c.fits(at, ji, gi, n) {
			continue // a node scoring no better than one found is not even checked
		}
		c.best = scored{node: n, score: s}
		if s == st.max {
			return n
		}
	}
	return -1
}
