package bridge

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
)

// checkPlacementRules verifies that every job a cycle bound keeps, with what it runs after
// the cycle, to its node sets, one task per node, exclusive nodes and required topology.
func checkPlacementRules(t *testing.T, s, next *Snapshot, d *Decisions) {
	t.Helper()
	labels := map[string]map[string]string{}
	for _, n := range s.Nodes {
		labels[n.Name] = n.Labels
	}
	sets := map[string][]string{}
	for _, ns := range s.NodeSets {
		if _, dup := sets[ns.Name]; !dup {
			sets[ns.Name] = ns.Nodes
		}
	}
	bound := map[string]bool{}
	for _, b := range d.Binds {
		bound[b.Job] = true
	}
	jobsOn := map[string]map[string]bool{} // node -> jobs running there
	for _, j := range next.Jobs {
		for _, r := range j.Running {
			if jobsOn[r.Node] == nil {
				jobsOn[r.Node] = map[string]bool{}
			}
			jobsOn[r.Node][j.ID] = true
		}
	}
	for _, j := range next.Jobs {
		if !bound[j.ID] {
			continue
		}
		seen := map[string]bool{}
		domain := ""
		for i, r := range j.Running {
			group := j.Groups[0]
			for _, g := range j.Groups {
				if g.Name == r.Group {
					group = g
				}
			}
			if group.NodeSet != "" && !altSets(j) && !slices.Contains(sets[group.NodeSet], r.Node) {
				t.Errorf("job %s task %s on %s, outside its node set %s", j.ID, r.Name, r.Node, group.NodeSet)
			}
			if j.Placement.OnePerNode && seen[r.Node] {
				t.Errorf("job %s runs two tasks on %s although it asks for one per node", j.ID, r.Node)
			}
			seen[r.Node] = true
			if j.Placement.Exclusive && len(jobsOn[r.Node]) > 1 {
				t.Errorf("exclusive job %s shares node %s with %v", j.ID, r.Node, jobsOn[r.Node])
			}
			if key := j.Placement.RequiredLevel; key != "" {
				v, ok := labels[r.Node][key]
				if !ok || (i > 0 && v != domain) {
					t.Errorf("job %s task %s on %s (%s=%q), outside its required %s domain %q", j.ID, r.Name, r.Node, key, v, key, domain)
				}
				if i == 0 {
					domain = v
				}
			}
		}
	}
	checkAffinityRules(t, s, next, bound)
	checkAlternatives(t, s, next, bound)
	for _, j := range next.Jobs {
		if !j.Placement.Exclusive {
			continue
		}
		for _, r := range j.Running {
			if len(jobsOn[r.Node]) > 1 && (bound[j.ID] || anyBoundOn(d, r.Node)) {
				t.Errorf("node %s of exclusive job %s shared with %v", r.Node, j.ID, jobsOn[r.Node])
			}
		}
	}
}

func anyBoundOn(d *Decisions, node string) bool {
	return slices.ContainsFunc(d.Binds, func(b Bind) bool { return b.Node == node })
}

// checkAffinityRules verifies that every task of a bound job keeps to its required
// affinity (a task its selector matches in the same domain, its own job's included, or
// nothing it selects anywhere when it selects itself) and anti-affinity (no other task it
// selects in the same domain).
func checkAffinityRules(t *testing.T, s, next *Snapshot, bound map[string]bool) {
	t.Helper()
	type task struct {
		job, name, scope string
		labels           map[string]string
		node             *Node
	}
	nodes := map[string]*Node{}
	var tasks []task
	for i := range s.Nodes {
		n := &s.Nodes[i]
		nodes[n.Name] = n
		for k, f := range n.Foreign {
			tasks = append(tasks, task{name: fmt.Sprintf("foreign-%s-%d", n.Name, k), scope: f.Scope, labels: f.Labels, node: n})
		}
	}
	for _, j := range next.Jobs {
		for _, r := range j.Running {
			if n := nodes[r.Node]; n != nil {
				tasks = append(tasks, task{job: j.ID, name: r.Name, scope: j.Scope, labels: j.Labels, node: n})
			}
		}
	}
	for _, j := range next.Jobs {
		if !bound[j.ID] {
			continue
		}
		for _, rule := range j.Placement.Affinity {
			any := false
			for _, o := range tasks {
				_, has := o.node.Labels[rule.Level]
				any = any || (has && rule.Selector.Matches(o.scope, o.labels))
			}
			for _, r := range j.Running {
				dom, ok := nodes[r.Node].Labels[rule.Level]
				near := false
				for _, o := range tasks {
					if o.name != r.Name && rule.Selector.Matches(o.scope, o.labels) && ok && o.node.Labels[rule.Level] == dom {
						near = true
					}
				}
				switch {
				case rule.Anti && near:
					t.Errorf("job %s task %s on %s shares its %s domain with a task its anti-affinity %s selects", j.ID, r.Name, r.Node, rule.Level, rule.Text)
				case !rule.Anti && !ok:
					t.Errorf("job %s task %s on %s, which has no %s label its affinity needs", j.ID, r.Name, r.Node, rule.Level)
				case !rule.Anti && !near && any && len(j.Running) == 1:
					t.Errorf("job %s task %s on %s: no task its affinity %s selects in its %s domain", j.ID, r.Name, r.Node, rule.Text, rule.Level)
				}
			}
		}
	}
}

// checkAlternatives verifies that every task of a bound job of several alternatives runs
// inside one and the same alternative: its partition, and its node set when it names one.
func checkAlternatives(t *testing.T, s, next *Snapshot, bound map[string]bool) {
	t.Helper()
	partOf := map[string]string{}
	labels := map[string]map[string]string{}
	for _, n := range s.Nodes {
		partOf[n.Name], labels[n.Name] = n.Partition, n.Labels
	}
	sets := map[string][]string{}
	for _, ns := range s.NodeSets {
		sets[ns.Name] = ns.Nodes
	}
	for _, j := range next.Jobs {
		if !bound[j.ID] || len(j.Alternatives) == 0 {
			continue
		}
		inside := slices.ContainsFunc(j.Alternatives, func(a Alternative) bool {
			part := cmp.Or(a.Partition, j.Partition)
			for _, r := range j.Running {
				if partOf[r.Node] != part || (a.NodeSet != "" && !slices.Contains(sets[a.NodeSet], r.Node)) {
					return false
				}
				// An alternative's required level: every task in one domain of it.
				if lv := a.RequiredLevel; lv != "" {
					if v, ok := labels[r.Node][lv]; !ok || v != labels[j.Running[0].Node][lv] {
						return false
					}
				}
			}
			return true
		})
		if !inside {
			t.Errorf("job %s runs on %v, inside none of its alternatives %+v", j.ID, j.Running, j.Alternatives)
		}
	}
}

// altSets reports whether an alternative of the job replaces its groups' node sets.
func altSets(j Job) bool {
	return slices.ContainsFunc(j.Alternatives, func(a Alternative) bool { return a.NodeSet != "" })
}
