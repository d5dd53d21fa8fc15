package scheduler

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/sluicehq/sluice/bridge"
)

// addPlacement completes a snapshot's placement input: each group's node set (the nodes
// its constraints allow, computed once per distinct constraints and node change), each
// Slurm job's --switches as a topology level of its partition, and one of each host port
// that a job asks for on every node.
func (c *cache) addPlacement(s *bridge.Snapshot) {
	if c.classes == nil {
		c.classes = map[string]*nodeClass{}
	}
	for _, cl := range c.classes {
		cl.used = false
	}
	var ports []string
	for i := range s.Jobs {
		j := &s.Jobs[i]
		g := c.groups[j.ID]
		if g == nil || len(g.classes) != len(j.Groups) {
			continue
		}
		for k := range j.Groups {
			tg := &j.Groups[k]
			tg.NodeSet, tg.NodeScore = "", ""
			if cons := g.classes[k]; cons != nil {
				if k < len(g.claims) && len(g.claims[k]) > 0 {
					cons = c.withVolumes(cons, j.Scope, g.claims[k])
				}
				cl := c.classFor(cons)
				if !cl.all {
					tg.NodeSet = cons.key
				}
				if len(cl.scores) > 0 {
					tg.NodeScore = cons.key
				}
			}
			for _, q := range tg.Request.Extended {
				if strings.HasPrefix(q.Name, hostPortPrefix) && !slices.Contains(ports, q.Name) {
					ports = append(ports, q.Name)
				}
			}
		}
		if g.memberBased() && c.draPartition(j.Partition) {
			claimedGPUs(j)
		}
		if len(g.altParts) > 0 || len(g.altCons) > 0 {
			c.addAlternatives(j, g)
		}
		if g.switches > 0 && (g.switchWait <= 0 || s.Now.Sub(j.SubmitTime) < g.switchWait) {
			c.resolveSwitches(j, g.switches)
		}
		if len(g.rules) > 0 {
			j.Placement.Affinity = c.resolveRules(g.rules)
		}
	}
	for key, cl := range c.classes {
		switch {
		case !cl.used:
			delete(c.classes, key)
		case !cl.all:
			s.NodeSets = append(s.NodeSets, bridge.NodeSet{Name: key, Nodes: cl.nodes, Constraint: cl.cons.text})
		}
		if cl.used && len(cl.scores) > 0 {
			s.NodeScores = append(s.NodeScores, bridge.NodeScore{Name: key, Scores: cl.scores})
		}
	}
	if len(ports) > 0 {
		for i := range s.Nodes {
			ext := append([]bridge.Quantity(nil), s.Nodes[i].Allocatable.Extended...)
			for _, p := range ports {
				ext = addQuantity(ext, p, 1)
			}
			s.Nodes[i].Allocatable.Extended = ext
		}
	}
}

// classFor returns the class of a key of constraints, (re)computing its nodes when it is
// new or a node changed since.
func (c *cache) classFor(cons *nodeConstraints) *nodeClass {
	cl := c.classes[cons.key]
	if cl == nil {
		var aff *corev1.Affinity
		if cons.affinity != nil {
			aff = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: cons.affinity}}
		}
		cl = &nodeClass{cons: cons, req: nodeaffinity.NewRequiredNodeAffinity(cons.selector, aff), gen: c.nodeGen - 1}
		for _, v := range cons.volumes {
			cl.vols = append(cl.vols, nodeaffinity.NewLazyErrorNodeSelector(v))
		}
		if len(cons.preferred) > 0 {
			// The terms were accepted by the API server's validation; one that still
			// does not parse scores nothing.
			cl.prefer, _ = nodeaffinity.NewPreferredSchedulingTerms(cons.preferred)
		}
		c.classes[cons.key] = cl
	}
	cl.used = true
	if cl.gen == c.nodeGen {
		return cl
	}
	cl.gen, cl.all, cl.nodes, cl.draAlloc = c.nodeGen, true, cl.nodes[:0], nil
	if cl.prefer != nil {
		cl.scores = map[string]int32{}
	}
	for name, e := range c.nodes {
		if !e.seen || e.kube == nil {
			continue
		}
		if cl.allows(e.kube, c.tolerated) && c.draAllows(cl, e) {
			cl.nodes = append(cl.nodes, name)
			if cl.prefer != nil {
				if s := cl.prefer.Score(e.kube); s > 0 {
					cl.scores[name] = int32(min(s, 1<<30))
				}
			}
		} else {
			cl.all = false
		}
	}
	return cl
}

// resolveSwitches turns sbatch --switches=N into a topology level: one domain of the
// partition's innermost level is required for N=1 and preferred for more (the core does
// not count domains). A partition without a topology has nothing to keep to.
func (c *cache) resolveSwitches(j *bridge.Job, n int) {
	if len(j.Alternatives) > 0 { // each in its own partition's topology
		for i := range j.Alternatives {
			a := &j.Alternatives[i]
			if level := c.innermostLevel(cmp.Or(a.Partition, j.Partition)); level != "" && n == 1 {
				a.RequiredLevel = level
			} else if level != "" {
				a.PreferredLevel = level
			}
		}
		return
	}
	if level := c.innermostLevel(j.Partition); level != "" && n == 1 {
		j.Placement.RequiredLevel = level
	} else if level != "" && j.Placement.PreferredLevel == "" {
		j.Placement.PreferredLevel = level
	}
}

// innermostLevel is the innermost topology level of a partition, "" when it has none.
func (c *cache) innermostLevel(partition string) string {
	for _, p := range c.parts {
		if p.p.Name == partition && len(p.p.Topology) > 0 {
			return p.p.Topology[len(p.p.Topology)-1]
		}
	}
	return ""
}
