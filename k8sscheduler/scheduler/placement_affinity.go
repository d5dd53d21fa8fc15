package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sluicehq/sluice/bridge"
)

// podRule is one required pod affinity or anti-affinity term of a pod, as the core's rule.
// A term with a namespaceSelector is completed against the namespaces' labels when each
// snapshot is built (resolveRules), since those labels may change after the pod was read.
type podRule struct {
	rule  bridge.AffinityRule
	nsSel labels.Selector // nil: the term has none, or one that selects every namespace
	key   string          // equal terms of a gang's pods are kept once
}

// noNamespace is a scope no pod has: a term whose namespaces resolve to none selects nothing.
const noNamespace = " "

// podRules reads a pod's required pod affinity and anti-affinity terms, as kube-scheduler's
// InterPodAffinity filter reads them: the label selector with matchLabelKeys and
// mismatchLabelKeys merged in from the pod's own labels, and the namespaces the term
// names, those its namespaceSelector selects, or else the pod's own.
func podRules(pod *corev1.Pod) ([]podRule, error) {
	a := pod.Spec.Affinity
	if a == nil {
		return nil, nil
	}
	var out []podRule
	add := func(terms []corev1.PodAffinityTerm, anti bool) error {
		for i := range terms {
			r, err := termRule(pod, &terms[i], anti)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	}
	if a.PodAffinity != nil {
		if err := add(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, false); err != nil {
			return nil, err
		}
	}
	if a.PodAntiAffinity != nil {
		if err := add(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func termRule(pod *corev1.Pod, t *corev1.PodAffinityTerm, anti bool) (podRule, error) {
	kind := "podAffinity"
	if anti {
		kind = "podAntiAffinity"
	}
	r := podRule{rule: bridge.AffinityRule{Level: t.TopologyKey, Anti: anti,
		Selector: selectorOf(t.LabelSelector, t.MatchLabelKeys, t.MismatchLabelKeys, pod.Labels)}}
	if t.TopologyKey == "" {
		return r, fmt.Errorf("%s term without a topologyKey", kind)
	}
	where := ""
	switch {
	case t.NamespaceSelector != nil:
		sel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
		if err != nil {
			return r, fmt.Errorf("%s namespaceSelector: %v", kind, err)
		}
		if !sel.Empty() {
			r.nsSel = sel
			r.rule.Selector.Scopes = slices.Clone(t.Namespaces)
			where = " in namespaces " + sel.String()
		} else {
			where = " in every namespace"
		}
		if len(t.Namespaces) > 0 {
			where += " and " + strings.Join(t.Namespaces, ",")
		}
	case len(t.Namespaces) > 0:
		r.rule.Selector.Scopes = slices.Clone(t.Namespaces)
		where = " in namespaces " + strings.Join(t.Namespaces, ",")
	default:
		r.rule.Selector.Scopes = []string{pod.Namespace}
	}
	r.rule.Text = fmt.Sprintf("%s %s%s (topologyKey %s)", kind, selectorText(t.LabelSelector), where, t.TopologyKey)
	r.key = r.rule.Text + "|" + fmt.Sprint(r.rule.Selector)
	return r, nil
}

func selectorText(ls *metav1.LabelSelector) string {
	if ls == nil {
		return "(no selector: selects nothing)"
	}
	if s := metav1.FormatLabelSelector(ls); s != "" {
		return s
	}
	return "(every pod)"
}

// selectorOf converts a pod label selector; nil selects no pod, as in kube-scheduler. The
// keys of matchLabelKeys (mismatchLabelKeys) require the pod's own value (any other).
func selectorOf(ls *metav1.LabelSelector, match, mismatch []string, own map[string]string) bridge.Selector {
	if ls == nil {
		return bridge.Selector{MatchExpressions: []bridge.Requirement{{Key: noNamespace, Operator: bridge.OpIn}}}
	}
	s := bridge.Selector{MatchLabels: ls.MatchLabels}
	for _, e := range ls.MatchExpressions {
		s.MatchExpressions = append(s.MatchExpressions, bridge.Requirement{Key: e.Key, Operator: string(e.Operator), Values: e.Values})
	}
	for _, k := range match {
		if v, ok := own[k]; ok {
			s.MatchExpressions = append(s.MatchExpressions, bridge.Requirement{Key: k, Operator: bridge.OpIn, Values: []string{v}})
		}
	}
	for _, k := range mismatch {
		if v, ok := own[k]; ok {
			s.MatchExpressions = append(s.MatchExpressions, bridge.Requirement{Key: k, Operator: bridge.OpNotIn, Values: []string{v}})
		}
	}
	return s
}

// spreadRules are a pod's topology spread constraints with whenUnsatisfiable
// DoNotSchedule, as the core's spread rules: counting the pods of its namespace that the
// selector (with matchLabelKeys) matches, other jobs' and other schedulers' too. A
// constraint asking to count nodes the pod's node affinity excludes (nodeAffinityPolicy
// Ignore) is refused: Sluice counts only the nodes the pod may use.
func spreadRules(pod *corev1.Pod) ([]bridge.SpreadRule, error) {
	var out []bridge.SpreadRule
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		if c.NodeAffinityPolicy != nil && *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyIgnore {
			return nil, fmt.Errorf("topologySpreadConstraint on %s with nodeAffinityPolicy Ignore: Sluice counts only the nodes the pod's node affinity allows", c.TopologyKey)
		}
		sel := selectorOf(c.LabelSelector, c.MatchLabelKeys, nil, pod.Labels)
		sel.Scopes = []string{pod.Namespace}
		r := bridge.SpreadRule{Level: c.TopologyKey, MaxSkew: c.MaxSkew, Selector: &sel}
		if c.MinDomains != nil {
			r.MinDomains = *c.MinDomains
		}
		out = append(out, r)
	}
	return out, nil
}

// resolveRules completes a gang's rules for one snapshot: a namespaceSelector selects the
// namespaces whose labels it matches now.
func (c *cache) resolveRules(rules []podRule) []bridge.AffinityRule {
	out := make([]bridge.AffinityRule, len(rules))
	for i := range rules {
		out[i] = rules[i].rule
		if sel := rules[i].nsSel; sel != nil {
			scopes := slices.Clone(out[i].Selector.Scopes)
			for ns, l := range c.nsLabels {
				if sel.Matches(labels.Set(l)) && !slices.Contains(scopes, ns) {
					scopes = append(scopes, ns)
				}
			}
			if len(scopes) == 0 {
				scopes = []string{noNamespace}
			}
			slices.Sort(scopes)
			out[i].Selector.Scopes = scopes
		}
	}
	return out
}

// addRules adds a pod's rules to its gang's, each distinct term once.
func addRules(into []podRule, rules []podRule) []podRule {
	for _, r := range rules {
		if !slices.ContainsFunc(into, func(o podRule) bool { return o.key == r.key }) {
			into = append(into, r)
		}
	}
	return into
}

// commonLabels are the labels every pod of a gang carries with the same value: what other
// pods' selectors match the gang by. A group of one shares its pod's map.
func commonLabels(acc map[string]string, first bool, l map[string]string) map[string]string {
	if first {
		return l
	}
	if maps.Equal(acc, l) {
		return acc
	}
	out := map[string]string{}
	for k, v := range acc {
		if w, ok := l[k]; ok && w == v {
			out[k] = v
		}
	}
	return out
}
