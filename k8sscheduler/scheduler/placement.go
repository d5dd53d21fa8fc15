package scheduler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// nodeConstraints is what a pod (or a Slurm job's PodGroup) asks of a node by itself: its
// nodeSelector, required node affinity and tolerations. Pods with equal constraints share
// one key, and the nodes that satisfy them are computed once per key (a nodeClass), not
// once per pod.
type nodeConstraints struct {
	key         string
	selector    map[string]string
	affinity    *corev1.NodeSelector
	tolerations []corev1.Toleration
	volumes     []*corev1.NodeSelector // node affinity of its bound PersistentVolumes
	preferred   []corev1.PreferredSchedulingTerm
	dra         *draAsk // what its resource claims ask of the node (dra_pods.go)
	text        string  // for why-pending
}

// plainConstraints are those of a pod that asks nothing: it may use any node whose taints
// it tolerates (none but the configured ones).
var plainConstraints = &nodeConstraints{key: "plain", text: "the pod's tolerations (it has none) of node taints"}

// podConstraints reads a pod's node constraints.
func podConstraints(spec *corev1.PodSpec) *nodeConstraints {
	var aff *corev1.NodeSelector
	var pref []corev1.PreferredSchedulingTerm
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		aff = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		pref = a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	}
	if len(spec.NodeSelector) == 0 && aff == nil && len(spec.Tolerations) == 0 && len(pref) == 0 {
		return plainConstraints
	}
	c := newConstraints(spec.NodeSelector, aff, spec.Tolerations)
	if len(pref) > 0 {
		raw, _ := json.Marshal(pref)
		sum := sha256.Sum256(append([]byte(c.key), raw...))
		c.key, c.preferred = hex.EncodeToString(sum[:12]), pref
	}
	return podsConstraints.share(c.key, c)
}

// podsConstraints holds one nodeConstraints per key for all the pods that ask it (every pod
// of a job, and every pod that tolerates what the API server adds to each: about 200 bytes
// a pod). A nodeConstraints is never changed once made (withVolumes makes a new one).
var podsConstraints sharedPointers[nodeConstraints]

func newConstraints(sel map[string]string, aff *corev1.NodeSelector, tol []corev1.Toleration) *nodeConstraints {
	raw, _ := json.Marshal(struct {
		S map[string]string    `json:"s,omitempty"`
		A *corev1.NodeSelector `json:"a,omitempty"`
		T []corev1.Toleration  `json:"t,omitempty"`
	}{sel, aff, tol})
	sum := sha256.Sum256(raw)
	return &nodeConstraints{key: hex.EncodeToString(sum[:12]), selector: sel, affinity: aff, tolerations: tol,
		text: describeConstraints(sel, aff, tol)}
}

// describeConstraints says in one line what a pod asks of its node.
func describeConstraints(sel map[string]string, aff *corev1.NodeSelector, tol []corev1.Toleration) string {
	var parts []string
	if len(sel) > 0 {
		kv := make([]string, 0, len(sel))
		for k, v := range sel {
			kv = append(kv, k+"="+v)
		}
		slices.Sort(kv)
		parts = append(parts, "nodeSelector "+strings.Join(kv, ","))
	}
	if aff != nil {
		terms := make([]string, 0, len(aff.NodeSelectorTerms))
		for _, t := range aff.NodeSelectorTerms {
			var reqs []string
			for _, r := range t.MatchExpressions {
				reqs = append(reqs, requirementText(r.Key, r.Operator, r.Values))
			}
			for _, r := range t.MatchFields {
				reqs = append(reqs, requirementText(r.Key, r.Operator, r.Values))
			}
			terms = append(terms, "("+strings.Join(reqs, " and ")+")")
		}
		parts = append(parts, "node affinity "+strings.Join(terms, " or "))
	}
	if len(tol) > 0 {
		parts = append(parts, fmt.Sprintf("%d tolerations", len(tol)))
	}
	return strings.Join(parts, "; ") + " (and node taints)"
}

func requirementText(key string, op corev1.NodeSelectorOperator, values []string) string {
	if len(values) == 0 {
		return key + " " + string(op)
	}
	return key + " " + string(op) + " [" + strings.Join(values, ",") + "]"
}

// nodeClass is the set of nodes one key of constraints allows, valid while no node
// changed (gen).
type nodeClass struct {
	cons *nodeConstraints
	req  nodeaffinity.RequiredNodeAffinity
	vols []*nodeaffinity.LazyErrorNodeSelector
	// prefer scores nodes by the preferred node affinity; scores holds the nodes scoring
	// above 0, as of gen.
	prefer *nodeaffinity.PreferredSchedulingTerms
	scores map[string]int32
	gen    uint64
	// draAlloc finds where the class's resource claims could be met, as of gen, until
	// draDeadline.
	draAlloc    structured.Allocator
	draDeadline time.Time
	nodes       []string
	all         bool // every node of the snapshot: the core needs no set
	used        bool // named by a job of the snapshot being built
}

// allows reports whether a node satisfies the class: kube-scheduler's NodeAffinity and
// TaintToleration filters, with the configured taint keys tolerated by every pod.
func (cl *nodeClass) allows(n *corev1.Node, tolerated []string) bool {
	if ok, err := cl.req.Match(n); !ok || err != nil || !volumesAllow(cl.vols, n) {
		return false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, cl.cons.tolerations,
		func(t *corev1.Taint) bool {
			return (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && !tolerates(tolerated, t.Key)
		}, false)
	return !untolerated
}

// placementOf reads a gang's topology and exclusivity from annotations (the PodGroup's,
// else its first pod's): Sluice's names first, then KAI's.
func placementOf(ann map[string]string) bridge.Placement {
	p := bridge.Placement{
		RequiredLevel:  firstSet(ann[v1alpha1.TopologyRequiredAnnotation], ann[v1alpha1.KAITopologyRequiredAnnotation]),
		PreferredLevel: firstSet(ann[v1alpha1.TopologyPreferredAnnotation], ann[v1alpha1.KAITopologyPreferredAnnotation]),
	}
	p.Exclusive = v1alpha1.ParseExclusive(ann[v1alpha1.ExclusiveAnnotation])
	return p
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// onePerNode reports whether a pod's required anti-affinity keeps pods like it (its own
// labels match the term's selector) off a node that already runs one: the usual way a
// manifest says one pod per node. Only the pod's own gang is kept apart this way.
func onePerNode(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return false
	}
	for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if t.TopologyKey != corev1.LabelHostname || t.LabelSelector == nil {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector); err == nil && sel.Matches(labels.Set(pod.Labels)) {
			return true
		}
	}
	return false
}

// hostPortResource names a host port as an extended resource every node has one of: two
// pods asking for the same protocol and port never share a node. Addresses are not told
// apart (kube-scheduler lets pods on different host IPs share a port), which only ever
// refuses a node kube-scheduler would accept.
func hostPortResource(protocol corev1.Protocol, port int32) string {
	if protocol == "" {
		protocol = corev1.ProtocolTCP
	}
	return hostPortPrefix + string(protocol) + "-" + strconv.Itoa(int(port))
}

const hostPortPrefix = "host-port.sluice.dev/"

// podsResource is the node's allocatable pod count, and every pod's ask of one.
const podsResource = "pods"

// consKey is the key of a pod's node constraints, "" for a pod of another scheduler.
func (p *podEntry) consKey() string {
	if p.cons == nil {
		return ""
	}
	return p.cons.key
}

// placement fills in what the gang asks of its nodes: a Slurm job's from its PodGroup (one
// pod per node, as each pod is one of its nodes; --constraint, -w and -x as node affinity;
// --exclusive; --switches), a manifest gang's from its PodGroup's annotations, else its
// first pod's, and each group's node constraints.
func (g *groupEntry) placement(pg *v1alpha1.PodGroup, j *bridge.Job) bool {
	j.Placement = placementOf(pg.Annotations)
	if !g.memberBased() {
		g.podsPlacement(&j.Placement)
		return true
	}
	j.Placement.OnePerNode = true
	g.switches, _ = v1alpha1.ParseSwitches(pg.Annotations[v1alpha1.SwitchesAnnotation])
	if w, err := v1alpha1.ParseSwitchesWait(pg.Annotations[v1alpha1.SwitchesWaitAnnotation]); err == nil && w > 0 {
		g.switchWait = w
	}
	cons := plainConstraints
	if raw := pg.Annotations[v1alpha1.NodeAffinityAnnotation]; raw != "" {
		ns, err := v1alpha1.ParseNodeAffinity(raw)
		if err != nil {
			return g.block(bridge.ReasonBadConstraints, "%v", err)
		}
		cons = newConstraints(nil, &ns, nil)
		if text := pg.Annotations[v1alpha1.NodeConstraintAnnotation]; text != "" {
			c := *cons
			c.text = text
			cons = &c
		}
	}
	if !g.readAlternatives(pg) {
		return false
	}
	for i := range g.classes {
		g.classes[i] = cons
	}
	return true
}

// podsPlacement adds what the gang's pods ask of their nodes together to what its PodGroup
// asks: every pod's rules count (an MPIJob's launcher may ask less than its workers), the
// strictest wins. A topology level the PodGroup does not name comes from the first pod by
// name that names one.
func (g *groupEntry) podsPlacement(pl *bridge.Placement) {
	names := slices.Sorted(g.pods.names())
	levels := pl.RequiredLevel != "" || pl.PreferredLevel != ""
	for _, name := range names {
		pp := &g.pods.get(name).placement
		if !levels && (pp.RequiredLevel != "" || pp.PreferredLevel != "") {
			pl.RequiredLevel, pl.PreferredLevel, levels = pp.RequiredLevel, pp.PreferredLevel, true
		}
		pl.Exclusive = pl.Exclusive || pp.Exclusive
		pl.OnePerNode = pl.OnePerNode || pp.OnePerNode
		for _, sp := range pp.Spread {
			if !slices.ContainsFunc(pl.Spread, func(o bridge.SpreadRule) bool { return sameSpread(&o, &sp) }) {
				pl.Spread = append(pl.Spread, sp)
			}
		}
	}
}

func sameSpread(a, b *bridge.SpreadRule) bool {
	return a.Level == b.Level && a.MaxSkew == b.MaxSkew && a.MinDomains == b.MinDomains &&
		(a.Selector == nil) == (b.Selector == nil) && (a.Selector == nil || reflect.DeepEqual(*a.Selector, *b.Selector))
}

func samePlacement(a, b *bridge.Placement) bool {
	return a.RequiredLevel == b.RequiredLevel && a.PreferredLevel == b.PreferredLevel && a.OnePerNode == b.OnePerNode &&
		a.Exclusive == b.Exclusive && slices.EqualFunc(a.Spread, b.Spread, func(x, y bridge.SpreadRule) bool { return sameSpread(&x, &y) })
}
