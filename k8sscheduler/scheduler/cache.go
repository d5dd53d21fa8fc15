package scheduler

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// cache holds every object the scheduler looks at, already converted to the core's types
// and updated by informer events, so that a cycle only copies what changed into a
// snapshot. All fields are guarded by mu.
type cache struct {
	mu       sync.Mutex
	nodes    map[string]*nodeEntry
	parts    []partitionEntry // by name
	queues   map[string]bridge.Queue
	access   map[string]queueAccess       // by queue: who may use it
	nsLabels map[string]map[string]string // by namespace
	qos      map[string]bridge.QOS
	groups   map[string]*groupEntry
	// order lists the groups in the order they came, so that a job keeps its position in
	// the snapshot from one cycle to the next (the core then finds what it carried over for
	// it at once, bridge/carry.go); removed groups are dropped from it by listedGroups.
	order     []*groupEntry
	removed   int
	pods      map[string]*podEntry
	batches   map[string]map[string]bool // submit batch name -> the group keys it holds (batches.go)
	expanded  []bridge.Queue             // queues with "*" quotas expanded; nil when stale
	partNames []string                   // every partition of the last snapshot
	changed   chan struct{}              // signalled (never blocking) when a cycle should run soon
	changes   atomic.Uint64              // how many times changed was signalled, for the loop's pacing
	slurmPods bool                       // a PodFactory is wired: pod-less (Slurm) groups may be placed
	// nodeBuf and jobBuf back the last snapshot's Nodes and Jobs; the next snapshot reuses
	// them (the cycle that read it is over), sparing a megabyte of garbage per cycle at
	// 4000 pods.
	nodeBuf []bridge.Node
	jobBuf  []bridge.Job
	// classes are the node constraints of the jobs in the last snapshot, by key, each with
	// the nodes that satisfy it as of nodeGen, which counts changes of nodes.
	classes   map[string]*nodeClass
	nodeGen   uint64
	tolerated []string // taint keys every pod is taken to tolerate (Config.ToleratedTaints)
	// reservations are the GPU reservation pods by slot; sharedSlots counts the bound
	// shared-GPU pods on each slot (reservations.go).
	reservations map[slot]*reservation
	sharedSlots  map[slot]int
	// claims (by namespace/name), volumes (by name) and lateBinding (storage classes that
	// bind on first consumer) place pods next to their volumes (placement_volumes.go).
	claims      map[string]claimEntry
	volumes     map[string]*volumeEntry
	lateBinding map[string]bool
	// advance are the advance reservations (Reservation objects) by name
	// (advance_reservations.go).
	advance map[string]*v1alpha1.Reservation
	// dra is what Dynamic Resource Allocation publishes and claims (dra*.go).
	dra *draState
}

// nodeEntry is one node: its own conversion plus the pods of other schedulers on it.
type nodeEntry struct {
	base    bridge.Node
	seen    bool // the Node object exists (foreign pods may name a node before it is seen)
	foreign map[string]*podEntry
	// yielding are idle-node validations on it: not counted as used, listed in
	// bridge.Node.Yielding so a job placed here has them deleted first.
	yielding map[string]*podEntry
	built    bridge.Node
	dirty    bool
	// kube is the node's name, labels and taints, as node affinity and tolerations match them.
	kube *corev1.Node
	// dra is the GPUs the node publishes through DRA, nil when none (dra_nodes.go).
	dra *draNode
}

func newCache() *cache {
	return &cache{
		nodes: map[string]*nodeEntry{}, queues: map[string]bridge.Queue{}, qos: map[string]bridge.QOS{},
		access: map[string]queueAccess{}, nsLabels: map[string]map[string]string{},
		groups: map[string]*groupEntry{}, pods: map[string]*podEntry{}, changed: make(chan struct{}, 1),
		reservations: map[slot]*reservation{}, sharedSlots: map[slot]int{},
		claims: map[string]claimEntry{}, volumes: map[string]*volumeEntry{}, lateBinding: map[string]bool{},
		dra: newDRAState(DefaultGPUDeviceClasses),
	}
}

func (c *cache) poke() {
	c.changes.Add(1)
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *cache) node(name string) *nodeEntry {
	n := c.nodes[name]
	if n == nil {
		n = &nodeEntry{foreign: map[string]*podEntry{}, yielding: map[string]*podEntry{}, dirty: true}
		c.nodes[name] = n
	}
	return n
}

func (c *cache) group(key string) *groupEntry {
	g := c.groups[key]
	if g == nil {
		g = &groupEntry{key: key, dirty: true}
		c.groups[key] = g
		c.order = append(c.order, g)
	}
	return g
}

// setNode records a node's conversion; unchanged nodes (status heartbeats) do not wake the
// cycle.
func (c *cache) setNode(n bridge.Node, kube *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.node(n.Name)
	if e.seen && sameNode(&e.base, &n) && e.kube != nil && sameTaints(e.kube.Spec.Taints, kube.Spec.Taints) {
		return
	}
	e.base, e.seen, e.dirty = n, true, true
	e.kube = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: kube.Name, Labels: kube.Labels}, Spec: corev1.NodeSpec{Taints: kube.Spec.Taints}}
	c.nodeGen++
	c.poke()
}

func sameTaints(a, b []corev1.Taint) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.Taint) bool { return x.Key == y.Key && x.Value == y.Value && x.Effect == y.Effect })
}

func (c *cache) deleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.nodes[name]; e != nil {
		if len(e.foreign) == 0 && len(e.yielding) == 0 {
			delete(c.nodes, name)
		} else {
			e.seen, e.base, e.kube = false, bridge.Node{}, nil
		}
		c.nodeGen++
		c.poke()
	}
}

// pod is the entry under key, nil when none. Entries are not changed once stored, so the
// caller may read it unlocked.
func (c *cache) pod(key string) *podEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pods[key]
}

// setPod records a pod; nil removes the one under key.
func (c *cache) setPod(key string, p *podEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.pods[key]
	if old != nil && p != nil && old.sameAs(p) {
		c.pods[key] = p
		if g := c.groups[p.group]; p.member() && g != nil {
			g.putPod(p) // keeps the start time fresh without rebuilding the job
		}
		return
	}
	if old != nil {
		c.detach(old)
		c.countShared(old, -1)
		delete(c.pods, key)
	}
	confirmed := false
	if p != nil {
		c.pods[key] = p
		confirmed = c.attach(p)
		c.countShared(p, +1)
	}
	if !confirmed {
		c.poke()
	}
}

// member reports whether the pod is a task of one of our PodGroups.
func (p *podEntry) member() bool { return p.ours && p.group != "" }

// attach files a pod under its group or, for other schedulers' pods, its node. It reports
// whether the pod only confirms a bind the cache already assumed: the next cycle would see
// the same cluster, so none is woken for it (a backlog's thousands of confirmations would
// each cost a cycle otherwise).
func (c *cache) attach(p *podEntry) (confirmed bool) {
	if p.member() {
		g := c.group(p.group)
		g.putPod(p)
		if p.node != "" {
			b, ok := g.assumed[p.name]
			confirmed = ok && b.Node == p.node
			g.unassume(p.name)
		}
		g.dirty = true
		return confirmed
	}
	if p.node != "" {
		n := c.node(p.node)
		if p.yielding {
			n.yielding[p.key()] = p
		} else {
			n.foreign[p.key()] = p
		}
		n.dirty = true
	}
	return false
}

func (c *cache) detach(p *podEntry) {
	if p.member() {
		if g := c.groups[p.group]; g != nil {
			g.dropPod(p.name)
			g.dirty = true
			if g.pg == nil && g.pods.len() == 0 && len(g.assumed) == 0 {
				c.removeGroup(g)
			}
		}
		return
	}
	if n := c.nodes[p.node]; n != nil {
		delete(n.foreign, p.key())
		delete(n.yielding, p.key())
		n.dirty = true
		if !n.seen && len(n.foreign) == 0 && len(n.yielding) == 0 {
			delete(c.nodes, p.node)
		}
	}
}

// sameAs reports whether nothing the scheduler decides on differs between two versions.
func (p *podEntry) sameAs(o *podEntry) bool {
	return p.node == o.node && p.terminating == o.terminating && p.yielding == o.yielding && p.group == o.group && p.ours == o.ours &&
		p.bad == o.bad && p.gpu == o.gpu && sameResources(&p.request, &o.request) &&
		p.taskGroup == o.taskGroup && p.priority == o.priority && p.queue == o.queue && p.deadline == o.deadline &&
		p.partition == o.partition && (p.assignment == nil) == (o.assignment == nil) &&
		p.consKey() == o.consKey() && samePlacement(&p.placement, &o.placement) &&
		(p.oneOf == nil) == (o.oneOf == nil) && len(p.rules) == len(o.rules) && maps.Equal(p.labels, o.labels) &&
		slices.Equal(p.claims, o.claims) && slices.Equal(p.draClaims, o.draClaims)
}

func sameResources(a, b *bridge.Resources) bool {
	return a.GPUMilli == b.GPUMilli && a.GPUMemoryMiB == b.GPUMemoryMiB && a.CPUMilli == b.CPUMilli &&
		a.MemoryBytes == b.MemoryBytes && slices.Equal(a.Extended, b.Extended)
}

func sameNode(a, b *bridge.Node) bool {
	if a.Unschedulable != b.Unschedulable || !sameResources(&a.Allocatable, &b.Allocatable) || !slices.EqualFunc(a.GPUs, b.GPUs, sameGPU) {
		return false
	}
	if len(a.Labels) != len(b.Labels) {
		return false
	}
	for k, v := range a.Labels {
		if w, ok := b.Labels[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sameGPU(a, b bridge.GPU) bool {
	return a.Index == b.Index && a.UUID == b.UUID && a.MemoryMiB == b.MemoryMiB && a.Model == b.Model &&
		a.Unhealthy == b.Unhealthy && a.MIG == b.MIG
}

// setPartition adds, replaces or (nil) removes a partition; every node's partition and
// every "*" quota may change with it.
func (c *cache) setPartition(name string, p *partitionEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.parts = slices.DeleteFunc(c.parts, func(e partitionEntry) bool { return e.p.Name == name })
	if p != nil {
		c.parts = append(c.parts, *p)
		slices.SortFunc(c.parts, func(a, b partitionEntry) int { return strings.Compare(a.p.Name, b.p.Name) })
	}
	for _, n := range c.nodes {
		n.dirty = true
	}
	for _, g := range c.groups {
		g.dirty = true
	}
	c.nodeGen++ // a node's partition may have changed
	c.expanded = nil
	c.poke()
}

func (c *cache) setQueue(name string, q *bridge.Queue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if q == nil {
		delete(c.queues, name)
	} else {
		c.queues[name] = *q
	}
	c.expanded = nil
	c.poke()
}

func (c *cache) setQOS(name string, q *bridge.QOS) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if q == nil {
		delete(c.qos, name)
	} else {
		c.qos[name] = *q
	}
	c.poke()
}

// snapshot assembles the core's input from the converted objects, rebuilding only what
// changed. It also returns the pending entries of groups the core is not shown. The
// snapshot is valid until the next call, which reuses its Nodes and Jobs.
func (c *cache) snapshot(now time.Time) (*bridge.Snapshot, []bridge.Pending) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &bridge.Snapshot{Now: now, Nodes: c.nodeBuf[:0]}
	names := map[string]bool{}
	for _, p := range c.parts {
		s.Partitions = append(s.Partitions, p.p)
		names[p.p.Name] = true
	}
	for _, n := range c.nodes {
		if !n.seen {
			continue
		}
		if n.dirty {
			n.rebuild(c.parts)
		}
		if n.built.Partition == "" {
			continue
		}
		if !names[n.built.Partition] { // a partition known only from node labels
			names[n.built.Partition] = true
			s.Partitions = append(s.Partitions, bridge.Partition{Name: n.built.Partition})
		}
		s.Nodes = append(s.Nodes, n.built)
	}
	partNames := make([]string, 0, len(names))
	for n := range names {
		partNames = append(partNames, n)
	}
	slices.Sort(partNames)
	if c.expanded == nil || !slices.Equal(partNames, c.partNames) {
		c.expanded = make([]bridge.Queue, 0, len(c.queues))
		for _, q := range c.queues {
			c.expanded = append(c.expanded, expandQuotas(q, partNames))
		}
	}
	c.partNames = partNames
	s.Queues = c.expanded
	for _, q := range c.qos {
		s.QOS = append(s.QOS, q)
	}
	def := c.defaultPartition()
	s.Jobs = c.jobBuf[:0]
	var blocked []bridge.Pending
	for _, g := range c.listedGroups() {
		if g.removed {
			continue
		}
		if g.dirty {
			g.build(def, c.slurmPods, c.queueRefusal)
		}
		if g.include && g.bound == 0 && len(g.assumed) == 0 && slices.ContainsFunc(g.claims, func(c []string) bool { return len(c) > 0 }) {
			if why := c.volumesWait(g); why != "" {
				blocked = append(blocked, bridge.Pending{Job: g.key, Code: ReasonWaitingForVolumes, Reason: why})
				continue
			}
		}
		if g.include {
			s.Jobs = append(s.Jobs, g.job)
		} else if g.blocked != nil {
			blocked = append(blocked, *g.blocked)
		}
	}
	s.AdvanceReservations = c.advanceReservations(now)
	c.addOrphans(s)
	c.addPlacement(s)
	c.nodeBuf, c.jobBuf = s.Nodes, s.Jobs
	return s, blocked
}

// defaultPartition is where a group naming no partition runs: the Partition marked
// default (the first by name), else the only partition there is.
func (c *cache) defaultPartition() string {
	for _, p := range c.parts {
		if p.isDefault {
			return p.p.Name
		}
	}
	if len(c.partNames) == 1 {
		return c.partNames[0]
	}
	return ""
}

// rebuild fills in the node's partition and what other schedulers' pods use on it.
func (n *nodeEntry) rebuild(parts []partitionEntry) {
	n.dirty = false
	b := n.base
	b.Partition = partitionOf(b.Labels, parts)
	n.dra.apply(&b, parts)
	keys := make([]string, 0, len(n.foreign))
	for k := range n.foreign {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		addForeign(&b, k, n.foreign[k])
	}
	b.Yielding = nil
	if len(n.yielding) > 0 {
		b.Yielding = make([]string, 0, len(n.yielding))
		for k := range n.yielding {
			b.Yielding = append(b.Yielding, k)
		}
		slices.Sort(b.Yielding)
	}
	n.built = b
}

// addForeign counts a pod the core does not know as a job's task as used on its node.
// The node's GPU list is copied before the first change, never shared with the cache.
func addForeign(b *bridge.Node, key string, p *podEntry) {
	if p.hasGPUs() {
		b.GPUs = slices.Clone(b.GPUs)
		if len(b.GPUs) == 0 && b.Allocatable.GPUMilli >= 1000 {
			k := b.Allocatable.GPUMilli / 1000
			b.GPUs = make([]bridge.GPU, k)
			for i := range b.GPUs {
				b.GPUs[i] = bridge.GPU{Index: int32(i), MemoryMiB: b.Allocatable.GPUMemoryMiB / k}
			}
		}
		takeForeignGPUs(b.GPUs, "foreign/"+key, p)
	}
	b.Used.Extended = slices.Clone(b.Used.Extended)
	req := p.request
	if p.reservation {
		// A GPU reservation's device is its shares' (the core frees it with them), so
		// its nvidia.com/gpu is not counted apart from them.
		req.Extended = slices.DeleteFunc(slices.Clone(req.Extended), isPluginGPU)
	}
	addUsed(&b.Used, req)
	if !p.reservation { // a GPU reservation is the shares', which their jobs stand for
		b.Foreign = append(slices.Clip(b.Foreign), bridge.ForeignTask{Scope: p.namespace, Labels: p.labels})
	}
}

func (p *podEntry) hasGPUs() bool { return p.request.GPUMilli > 0 || p.assignment != nil }

// addOrphans counts the bound pods of groups the snapshot has no job for (a PodGroup
// deleted, finished or malformed while its pods still run) on their nodes, for this
// snapshot only.
func (c *cache) addOrphans(s *bridge.Snapshot) {
	var idx map[string]int
	for _, g := range c.groups {
		if g.include {
			continue
		}
		for _, p := range g.pods.all() {
			if p.node == "" {
				continue
			}
			if idx == nil {
				idx = make(map[string]int, len(s.Nodes))
				for i := range s.Nodes {
					idx[s.Nodes[i].Name] = i
				}
			}
			if i, ok := idx[p.node]; ok {
				addForeign(&s.Nodes[i], p.key(), p)
			}
		}
	}
}

func addUsed(into *bridge.Resources, r bridge.Resources) {
	into.CPUMilli += r.CPUMilli
	into.MemoryBytes += r.MemoryBytes
	for _, q := range r.Extended {
		i := slices.IndexFunc(into.Extended, func(e bridge.Quantity) bool { return e.Name == q.Name })
		if i < 0 {
			into.Extended = append(into.Extended, q)
		} else {
			into.Extended[i].Value += q.Value
		}
	}
}

// takeForeignGPUs marks the devices another scheduler's pod holds: those its assignment
// names, else its whole GPUs on the highest free indices (the device plugin's choice is
// not visible to us).
func takeForeignGPUs(gpus []bridge.GPU, task string, p *podEntry) {
	if a := p.assignment; a != nil {
		milli := int32(a.Portion*1000 + 0.5)
		for _, d := range a.GPUs {
			for i := range gpus {
				if gpus[i].Index == d.Index {
					// A reservation holds its slot for the fractions on it and goes after them.
					gpus[i].Taken = append(slices.Clip(gpus[i].Taken), bridge.GPUTaken{Task: task, Milli: milli, MemoryMiB: a.GPUMemoryMiB,
						Hold: p.reservation})
				}
			}
		}
		return
	}
	need := p.request.GPUMilli / 1000
	for i := len(gpus) - 1; i >= 0 && need > 0; i-- {
		if len(gpus[i].Taken) == 0 {
			gpus[i].Taken = []bridge.GPUTaken{{Task: task, Milli: 1000}}
			need--
		}
	}
}

func (c *cache) setPodGroup(pg *v1alpha1.PodGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.group(pg.Namespace + "/" + pg.Name)
	if g.pg != nil && g.pg.Generation == pg.Generation && g.pg.Status.Phase == pg.Status.Phase &&
		g.pg.Annotations[v1alpha1.ReservationAnnotation] == pg.Annotations[v1alpha1.ReservationAnnotation] &&
		g.pg.Status.Requeues == pg.Status.Requeues && eligibility(g.pg) == eligibility(pg) &&
		(g.pg.DeletionTimestamp == nil) == (pg.DeletionTimestamp == nil) {
		g.pg, g.stored = pg, true // a status write of ours: nothing to reschedule
		return
	}
	if g.pg != nil && g.pg.Status.Requeues != pg.Status.Requeues {
		g.ran, g.finished, g.strayed = false, nil, false // a new run: the old one's pods are gone
	}
	if g.retry != nil && g.pg != nil && (g.pg.Generation != pg.Generation || eligibility(g.pg) != eligibility(pg)) {
		g.retry.at = time.Time{} // an edited or newly eligible job is tried at once
	}
	g.pg, g.dirty, g.stored, g.lost = pg, true, true, nil
	c.poke()
}

// noteRan records that a finished pod belonged to its group: a Slurm job whose pods all
// finished had pods, though the cache keeps none of them (neverCreated).
func (c *cache) noteRan(p *podEntry) {
	if !p.member() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.group(p.group)
	g.ran = true
	g.noteFinished(p.name)
}

func (c *cache) deletePodGroup(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[key]
	if g == nil {
		return
	}
	g.keepLost()
	g.pg, g.dirty, g.created, g.assumed = nil, true, false, nil
	// A job a batch still holds keeps its entry, marked stored, so the batch's copy does
	// not bring it back (batches.go).
	if g.pods.len() == 0 && g.batch == "" {
		c.removeGroup(g)
	}
	c.poke()
}

// removeGroup forgets a group; listedGroups drops it from the order.
func (c *cache) removeGroup(g *groupEntry) {
	delete(c.groups, g.key)
	g.removed = true
	c.removed++
}

// listedGroups returns the groups in the order they came. Removed ones are dropped once
// they are an eighth of the list: each drop moves the groups after them one place up, which
// the core follows (a job found at a constant distance from its last position) but pays for
// at each place where the distance changes.
func (c *cache) listedGroups() []*groupEntry {
	if c.removed > 0 && c.removed >= len(c.order)/8 {
		c.order = slices.DeleteFunc(c.order, func(g *groupEntry) bool { return g.removed })
		c.removed = 0
	}
	return c.order
}
