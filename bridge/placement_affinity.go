package bridge

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// AffinityRule is a required rule between jobs, kube-scheduler's required pod affinity and
// anti-affinity: a task goes only to a node whose domain of Level already runs a task that
// Selector matches (affinity), or none (Anti). A node without the Level label takes no
// task under an affinity rule and is never refused by an anti rule. As in kube-scheduler,
// the first task of a job whose own labels match all its affinity rules may go anywhere
// when nothing they select runs yet, and the job's own placed tasks count like any other.
// An anti rule also keeps away other jobs that its selector matches, once the job runs.
type AffinityRule struct {
	Level    string   `json:"level" yaml:"level"`
	Anti     bool     `json:"anti,omitempty" yaml:"anti,omitempty"`
	Selector Selector `json:"selector" yaml:"selector"`
	// Text says the rule in the user's words; why-pending quotes it.
	Text string `json:"text,omitempty" yaml:"text,omitempty"`
}

// Selector matches a job's tasks (Job.Labels and Scope) or a foreign task, as a Kubernetes
// pod affinity term does: the task's scope must be one of Scopes (any scope when Scopes is
// empty), and every MatchLabels pair and every requirement must hold.
type Selector struct {
	Scopes           []string          `json:"scopes,omitempty" yaml:"scopes,omitempty"`
	MatchLabels      map[string]string `json:"matchLabels,omitempty" yaml:"matchLabels,omitempty"`
	MatchExpressions []Requirement     `json:"matchExpressions,omitempty" yaml:"matchExpressions,omitempty"`
}

// Requirement is one label requirement: Operator In, NotIn, Exists or DoesNotExist.
type Requirement struct {
	Key      string   `json:"key" yaml:"key"`
	Operator string   `json:"operator" yaml:"operator"`
	Values   []string `json:"values,omitempty" yaml:"values,omitempty"`
}

// Requirement operators.
const (
	OpIn           = "In"
	OpNotIn        = "NotIn"
	OpExists       = "Exists"
	OpDoesNotExist = "DoesNotExist"
)

// Matches reports whether the selector selects a task with these labels.
func (s *Selector) Matches(scope string, labels map[string]string) bool {
	if len(s.Scopes) > 0 && !slices.Contains(s.Scopes, scope) {
		return false
	}
	for k, v := range s.MatchLabels {
		if have, ok := labels[k]; !ok || have != v {
			return false
		}
	}
	for _, r := range s.MatchExpressions {
		v, ok := labels[r.Key]
		switch r.Operator {
		case OpIn:
			if !ok || !slices.Contains(r.Values, v) {
				return false
			}
		case OpNotIn:
			if ok && slices.Contains(r.Values, v) {
				return false
			}
		case OpExists:
			if !ok {
				return false
			}
		case OpDoesNotExist:
			if ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// check returns what is wrong with the selector, "" when nothing.
func (s *Selector) check() string {
	for _, r := range s.MatchExpressions {
		switch r.Operator {
		case OpIn, OpNotIn, OpExists, OpDoesNotExist:
		default:
			return fmt.Sprintf("unknown selector operator %q", r.Operator)
		}
	}
	return ""
}

// key is the selector in a canonical form: equal selectors share their counts.
func (s *Selector) key(b *strings.Builder) {
	for _, sc := range s.Scopes {
		b.WriteString(strconv.Quote(sc) + ",")
	}
	b.WriteString("|")
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteString(strconv.Quote(k) + "=" + strconv.Quote(s.MatchLabels[k]) + ";")
	}
	for _, r := range s.MatchExpressions {
		b.WriteString(strconv.Quote(r.Key) + " " + r.Operator)
		for _, v := range r.Values {
			b.WriteString(" " + strconv.Quote(v))
		}
		b.WriteString(";")
	}
}

// selState is one selector at one topology level in the cycle: how many live tasks it
// matches per domain and per node, and how many live tasks of jobs with an anti rule
// naming it hold each domain. Every placement applied or taken away keeps them current.
type selState struct {
	sel     *Selector
	level   int32
	count   []int32 // per domain of level: live tasks it matches
	total   int32   // the same over every domain (nodes without the label not counted)
	holders []int32 // per domain: live tasks of jobs holding an anti rule with it
	anti    bool    // some job holds an anti rule with it
	onNode  []int32 // per node: live tasks it matches; kept only for spread rules
}

// jobAffinity is a job's part in the cycle's selectors.
type jobAffinity struct {
	rules     []affRule
	matches   []int32 // selectors that match the job's labels
	holds     []int32 // selectors the job holds an anti rule with
	selfMatch bool    // its labels match every one of its affinity rules
	positive  bool    // it has an affinity (not anti) rule
}

type affRule struct {
	sel  int32
	anti bool
	text string
}

// buildSelectors interns every selector of the snapshot's affinity and spread rules,
// before any job is built, and counts the nodes' foreign tasks they match.
func (c *cycle) buildSelectors() {
	for i := range c.s.Jobs {
		pl := &c.s.Jobs[i].Placement
		for k := range pl.Affinity {
			r := &pl.Affinity[k]
			st := &c.sels[c.selector(&r.Selector, r.Level, false)]
			st.anti = st.anti || r.Anti
		}
		for k := range pl.Spread {
			if sp := &pl.Spread[k]; sp.Selector != nil {
				c.selector(sp.Selector, sp.Level, true)
			}
		}
	}
	if len(c.sels) == 0 {
		return
	}
	for i := range c.s.Nodes {
		nd := &c.s.Nodes[i]
		n, ok := c.nodeIdx[nd.Name]
		if !ok {
			continue
		}
		for _, f := range nd.Foreign {
			for si := range c.sels {
				if c.sels[si].sel.Matches(f.Scope, f.Labels) {
					c.countMatch(int32(si), n, +1)
				}
			}
		}
	}
}

// selector returns the index of a selector's state at a level, adding it when new.
func (c *cycle) selector(s *Selector, level string, perNode bool) int32 {
	var b strings.Builder
	b.WriteString(strconv.Quote(level) + "|")
	s.key(&b)
	k := b.String()
	i, ok := c.selIdx[k]
	if !ok {
		if c.selIdx == nil {
			c.selIdx = map[string]int32{}
		}
		lv := c.level(level)
		n := len(c.levels[lv].names)
		i = int32(len(c.sels))
		c.selIdx[k] = i
		c.sels = append(c.sels, selState{sel: s, level: lv, count: make([]int32, n), holders: make([]int32, n)})
	}
	if st := &c.sels[i]; perNode && st.onNode == nil {
		st.onNode = make([]int32, len(c.nodes)) // interned before any task is counted
	}
	return i
}

func (c *cycle) countMatch(si, n int32, sign int32) {
	st := &c.sels[si]
	if d := c.levels[st.level].dom[n]; d >= 0 {
		st.count[d] += sign
		st.total += sign
	}
	if st.onNode != nil {
		st.onNode[n] += sign
	}
}

// selfAffinityLevel is the level of the job's first affinity rule that selects the job
// itself, "" when none does. Every task of such a job must share a domain of that level
// with one the rule selects, so the gang is placed as if that level were required: one
// domain for all of it, tried domain by domain, where placing task by task would start
// it on the first node that fits and find no room there for the rest. When tasks of other
// jobs that the rule selects run in several domains, this keeps the gang to one of them,
// which kube-scheduler would not.
func selfAffinityLevel(j *Job) string {
	for k := range j.Placement.Affinity {
		if r := &j.Placement.Affinity[k]; !r.Anti && r.Selector.Matches(j.Scope, j.Labels) {
			return r.Level
		}
	}
	return ""
}

// buildAffinity resolves a job's rules and the selectors its labels match.
func (c *cycle) buildAffinity(js *jobState) {
	js.aff = nil
	if len(c.sels) == 0 {
		return
	}
	pl := &js.job.Placement
	a := &jobAffinity{selfMatch: true}
	for k := range pl.Affinity {
		r := &pl.Affinity[k]
		if msg := r.Selector.check(); msg != "" {
			js.block(ReasonBadConstraints, "affinity rule "+r.Text+": "+msg)
		}
		si := c.selector(&r.Selector, r.Level, false)
		a.rules = append(a.rules, affRule{sel: si, anti: r.Anti, text: r.Text})
		if r.Anti {
			a.holds = append(a.holds, si)
		} else {
			a.positive = true
			a.selfMatch = a.selfMatch && r.Selector.Matches(js.job.Scope, js.job.Labels)
		}
	}
	for si := range c.sels {
		if c.sels[si].sel.Matches(js.job.Scope, js.job.Labels) {
			a.matches = append(a.matches, int32(si))
		}
	}
	if len(a.rules) > 0 || len(a.matches) > 0 {
		js.aff = a
		js.constrained = true
	}
}

// noteAffinity counts a placement of the job on node n coming (sign +1) or going (-1).
func (c *cycle) noteAffinity(a *jobAffinity, n int32, sign int32) {
	for _, si := range a.matches {
		c.countMatch(si, n, sign)
	}
	for _, si := range a.holds {
		st := &c.sels[si]
		if d := c.levels[st.level].dom[n]; d >= 0 {
			st.holders[d] += sign
		}
	}
}

// affinityAllows reports whether the job's rules, and the anti rules of jobs running
// anywhere, let one more of its tasks go on node n. It is kube-scheduler's InterPodAffinity
// filter over the cycle's counts.
func (c *cycle) affinityAllows(a *jobAffinity, n int32) bool {
	return c.affinityBlock(a, n) == nil
}

// affinityBlock returns the rule that keeps the job's task off node n: one of its own, or
// (anti true, sel set, text "") an anti rule of a running job; nil when none does.
func (c *cycle) affinityBlock(a *jobAffinity, n int32) *affRule {
	for _, si := range a.matches {
		if st := &c.sels[si]; st.anti {
			if d := c.levels[st.level].dom[n]; d >= 0 && st.holders[d] > 0 {
				return &affRule{sel: si, anti: true}
			}
		}
	}
	var missing *affRule
	for i := range a.rules {
		r := &a.rules[i]
		st := &c.sels[r.sel]
		d := c.levels[st.level].dom[n]
		switch {
		case r.anti:
			if d >= 0 && st.count[d] > 0 {
				return r
			}
		case d < 0:
			return r
		case st.count[d] <= 0 && missing == nil:
			missing = r
		}
	}
	if missing != nil && !(a.selfMatch && c.nothingSelected(a)) {
		return missing
	}
	return nil
}

// nothingSelected reports whether no task that the job's affinity rules select runs on a
// node with their level's label: the job may then start anywhere when it selects itself.
func (c *cycle) nothingSelected(a *jobAffinity) bool {
	for _, r := range a.rules {
		if !r.anti && c.sels[r.sel].total > 0 {
			return false
		}
	}
	return true
}

// affinityEver reports whether the job's affinity rules could ever let it use node n: its
// affinity levels must be labelled there.
func (c *cycle) affinityEver(a *jobAffinity, n int32) bool {
	for _, r := range a.rules {
		if !r.anti && c.levels[c.sels[r.sel].level].dom[n] < 0 {
			return false
		}
	}
	return true
}

// explainAffinity names the rule that kept the job off every node it could otherwise use,
// "" when no rule did.
func (c *cycle) explainAffinity(ji, gi int32) (string, string) {
	js := &c.jobs[ji]
	a := js.aff
	if a == nil {
		return "", ""
	}
	ps := &c.parts[js.part]
	var first *affRule
	for _, n := range ps.nodes {
		if !c.couldEverHold(n, ji, gi) {
			continue
		}
		r := c.affinityBlock(a, n)
		if r == nil {
			return "", "" // some node the rules allow: they are not to blame
		}
		if first == nil {
			first = r
		}
	}
	if first == nil {
		return "", ""
	}
	st := &c.sels[first.sel]
	level := c.levels[st.level].key
	switch {
	case first.text == "":
		return ReasonResources, fmt.Sprintf("the anti-affinity of running jobs keeps it out of every %s domain of partition %s it could use", level, ps.name)
	case first.anti:
		return ReasonResources, fmt.Sprintf("required anti-affinity %s keeps it out of every %s domain of partition %s it could use", first.text, level, ps.name)
	}
	return ReasonBadConstraints, fmt.Sprintf("required affinity %s: no %s domain of partition %s it could use runs a matching task", first.text, level, ps.name)
}

// appendAffinityKey adds the job's rules and the selectors it matches to a shape key. A
// job with an affinity rule gets a key of its own: other jobs starting can make room for
// it, so a failure of a job like it says nothing.
func appendAffinityKey(b []byte, js *jobState) []byte {
	a := js.aff
	if a == nil {
		return b
	}
	b = append(b, "|aff"...)
	for _, r := range a.rules {
		b = strconv.AppendInt(b, int64(r.sel), 10)
		if r.anti {
			b = append(b, '!')
		}
		b = append(b, ',')
	}
	b = append(b, "|m"...)
	for _, si := range a.matches {
		b = strconv.AppendInt(b, int64(si), 10)
		b = append(b, ',')
	}
	if a.positive {
		b = append(b, "|id"...)
		b = append(b, js.job.ID...)
	}
	return b
}
