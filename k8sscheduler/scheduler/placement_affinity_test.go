package scheduler

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func podTerm(key string, sel map[string]string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}
}

// TestPodAffinityBetweenJobs: each pod, alone in a cache with an app=db pod of another
// scheduler on n-a1 (namespace db, labelled team=data), goes where kube-scheduler's
// InterPodAffinity filter lets it, or waits with a reason naming the rule.
func TestPodAffinityBetweenJobs(t *testing.T) {
	near := func(t corev1.PodAffinityTerm) *corev1.Affinity {
		return &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{t}}}
	}
	away := func(t corev1.PodAffinityTerm) *corev1.Affinity {
		return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{t}}}
	}
	inNS := func(t corev1.PodAffinityTerm, ns ...string) corev1.PodAffinityTerm { t.Namespaces = ns; return t }
	nsSel := func(t corev1.PodAffinityTerm, sel map[string]string) corev1.PodAffinityTerm {
		t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: sel}
		return t
	}
	db := podTerm(corev1.LabelHostname, map[string]string{"app": "db"})
	dbZone := podTerm(corev1.LabelTopologyZone, map[string]string{"app": "db"})
	cases := []struct {
		name    string
		aff     *corev1.Affinity
		allowed []string // nil: waits
		reason  string
	}{
		{"affinity in its own namespace finds nothing", near(db), nil, "podAffinity app=db"},
		{"affinity by namespace list", near(inNS(db, "db")), []string{"n-a1"}, ""},
		{"affinity by namespaceSelector", near(nsSel(db, map[string]string{"team": "data"})), []string{"n-a1"}, ""},
		{"affinity by empty namespaceSelector: every namespace", near(nsSel(db, map[string]string{})), []string{"n-a1"}, ""},
		{"namespaceSelector no namespace matches", near(nsSel(db, map[string]string{"team": "none"})), nil, "podAffinity"},
		{"anti-affinity by zone", away(nsSel(dbZone, map[string]string{})), []string{"n-b1"}, ""},
		{"anti-affinity in its own namespace: anywhere", away(dbZone), []string{"n-a1", "n-b1"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache()
			for _, n := range placementNodes() {
				setTestNode(c, n)
			}
			c.setNamespace("db", map[string]string{"team": "data"}, false)
			c.setNamespace("ns", map[string]string{"team": "ml"}, false)
			c.setQueue("q", &bridge.Queue{Name: "q"})
			foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "db", Labels: map[string]string{"app": "db"}},
				Spec: corev1.PodSpec{SchedulerName: "default-scheduler", NodeName: "n-a1"}}
			c.setPod("db/db", convertPod(slimPod(foreign, "sluice"), "sluice"))
			c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}})
			pod := testPod("w", "1", nil, "")
			pod.Spec.Affinity = tc.aff
			c.setPod("ns/w", convertPod(pod, "sluice"))
			snap, blocked := c.snapshot(metav1.Now().Time)
			d := bridge.Schedule(snap)
			if tc.allowed == nil {
				if len(d.Binds) != 0 || len(blocked) != 0 || len(d.Pending) != 1 {
					t.Fatalf("binds %+v blocked %+v pending %+v, want it pending", d.Binds, blocked, d.Pending)
				}
				if p := d.Pending[0]; p.Code != bridge.ReasonBadConstraints || !strings.Contains(p.Reason, tc.reason) {
					t.Errorf("pending %+v, want BadConstraints naming %q", p, tc.reason)
				}
				return
			}
			if len(d.Binds) != 1 {
				t.Fatalf("binds %+v, pending %+v, blocked %+v", d.Binds, d.Pending, blocked)
			}
			if node := d.Binds[0].Node; !slices.Contains(tc.allowed, node) {
				t.Errorf("bound to %s, want one of %v", node, tc.allowed)
			}
		})
	}
}

// A spread constraint with nodeAffinityPolicy Ignore is a rule Sluice does not evaluate:
// the pod waits with BadConstraints naming it rather than bind where it should not.
func TestUnhonouredSpreadPolicyWaits(t *testing.T) {
	ignore := corev1.NodeInclusionPolicyIgnore
	pod := testPod("w", "1", nil, "")
	pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule, NodeAffinityPolicy: &ignore, LabelSelector: &metav1.LabelSelector{}}}
	e := convertPod(pod, "sluice")
	if !strings.Contains(e.bad, "nodeAffinityPolicy Ignore") {
		t.Errorf("bad = %q, want the refusal naming nodeAffinityPolicy Ignore", e.bad)
	}
}

// TestPreferredNodeAffinityScores: a pod that prefers zone b (weight 10) and rack r1
// (weight 30) goes to the node with the highest sum of weights it matches that fits, as
// kube-scheduler's NodeAffinity score ranks them; binpack alone would take n-a1, where
// another pod already holds GPUs.
func TestPreferredNodeAffinityScores(t *testing.T) {
	term := func(w int32, key, value string) corev1.PreferredSchedulingTerm {
		return corev1.PreferredSchedulingTerm{Weight: w, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}}}
	}
	cases := []struct {
		name  string
		terms []corev1.PreferredSchedulingTerm
		want  string
	}{
		{"zone b", []corev1.PreferredSchedulingTerm{term(10, corev1.LabelTopologyZone, "b")}, "n-b1"},
		{"rack r2 outweighs zone a", []corev1.PreferredSchedulingTerm{term(10, corev1.LabelTopologyZone, "a"), term(30, "rack", "r2")}, "n-b1"},
		{"no node matches: binpack", []corev1.PreferredSchedulingTerm{term(10, "rack", "r9")}, "n-a1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache()
			for _, n := range placementNodes() {
				setTestNode(c, n)
			}
			c.setQueue("q", &bridge.Queue{Name: "q"})
			c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "busy", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}})
			c.setPod("ns/busy", convertPod(testPod("busy", "4", map[string]string{v1alpha1.PodGroupAnnotation: "busy"}, "n-a1"), "sluice"))
			c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}})
			pod := testPod("w", "1", nil, "")
			pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: tc.terms}}
			c.setPod("ns/w", convertPod(pod, "sluice"))
			snap, _ := c.snapshot(metav1.Now().Time)
			d := bridge.Schedule(snap)
			if len(d.Binds) != 1 || d.Binds[0].Node != tc.want {
				t.Errorf("binds %+v (pending %+v), want it on %s", d.Binds, d.Pending, tc.want)
			}
		})
	}
}
