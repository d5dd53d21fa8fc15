package scheduler

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// groupEntry is one PodGroup with its pods and the job converted from them; the job is
// rebuilt only when the group, one of its pods or an in-flight bind changed (dirty).
type groupEntry struct {
	key string
	pg  *v1alpha1.PodGroup // nil while pods name a group not (yet) seen
	// batch names the submit batch the job was read from (batches.go).
	batch string
	pods  podSet
	one   *podEntry // the only pod, when it is a group of one (groupOfOne)
	// impliedPG is the PodGroup a group of one stands for, made from impliedOf (its pod's
	// version) when first asked for and dropped once the group is placed with nothing to
	// say (groupStatusLocked): most groups of one never need it again, and at scale they
	// were one of the cache's largest owners (measured: docs/benchmarks.md, Memory of
	// `sluice server`).
	impliedPG *v1alpha1.PodGroup
	impliedOf *corev1.Pod
	// assumed are binds in flight, by task name: counted as running until the pod shows
	// up bound (or the bind fails), so the next cycle does not place them twice.
	assumed map[string]bridge.Bind
	// finished names the group's pods seen finished (partialcreate.go).
	finished map[string]bool
	// retry holds the job back after a failed create of its pods (createbackoff.go); nil
	// until one fails, so most groups pay a pointer for it.
	retry *createRetry
	// lost is the group's PodGroup, deleted while its pods still run, to be written again
	// (restoregroup.go); nil otherwise.
	lost *lostGroup

	// The flags and counts are kept together, so that they share words (a group of one's
	// entry is 128 bytes smaller for it).
	//
	// created marks a pod-less (Slurm) group whose pods were created, for the run
	// numbered createdRun (the group's requeue count then).
	createdRun int32
	created    bool
	// ran marks a group one of whose pods was seen finished (the cache drops finished
	// pods): its job started, whatever its status and pods say now.
	ran bool
	// strayed marks a job whose partly created pods this leader removed (partialcreate.go).
	strayed bool
	// removed marks a group the cache no longer holds, still in its order (listedGroups).
	removed bool
	// stored says the group's PodGroup was seen stored, after which its batch's copy is
	// never used again.
	stored   bool
	dirty    bool
	include  bool  // job goes into the snapshot
	ranWhole bool  // at least minMember tasks ran at once
	bound    int32 // pods bound (not assumed)

	job     bridge.Job
	blocked *bridge.Pending // why the job is not even offered to the core

	// classes are the node constraints of each of job's groups, in order; switches is a
	// Slurm job's --switches (0: none), resolved against its partition's topology.
	classes    []*nodeConstraints
	switches   int
	switchWait time.Duration // --switches=N@MAX_TIME: how long the count holds; 0: always
	// rules are the required pod affinity and anti-affinity terms of its pods, each once;
	// resolved against namespace labels for each snapshot (addPlacement).
	rules []podRule
	// claims are, per task group, the PersistentVolumeClaims its pods mount.
	claims [][]string
	// altParts and altCons are a Slurm job's ways to run (placement_alternatives.go):
	// its partitions in order (-p a,b) and its node constraints per choice
	// (--constraint [a|b]); nil: one way.
	altParts []string
	altCons  []*nodeConstraints

	staleSince time.Time // when a gang that ran whole fell below minMember

	status groupStatus
}

// unassume drops a bind from those in flight. The map goes with the last one: an emptied
// map of Binds would stay with every group ever bound (1.6 KB each; measured:
// docs/benchmarks.md, Memory of `sluice server`).
func (g *groupEntry) unassume(task string) {
	delete(g.assumed, task)
	if len(g.assumed) == 0 {
		g.assumed = nil
	}
}

// podGroup is the group's PodGroup: the written one, else the one its group of one implies
// (jobstate.ImpliedPodGroup), else nil. Group names are never shared (the pod grouper's
// groupName), so a written one is always this group's.
func (g *groupEntry) podGroup() *v1alpha1.PodGroup {
	if g.pg != nil {
		return g.pg
	}
	if one := g.groupOfOne(); one != nil {
		if g.impliedOf != one.oneOf {
			g.impliedPG, g.impliedOf = jobstate.ImpliedPodGroup(one.oneOf), one.oneOf
		}
		return g.impliedPG
	}
	if g.lost != nil {
		return g.lost.pg // charged as before until it is written again
	}
	return nil
}

// forgetImplied drops the PodGroup made for a group of one; it is made again if asked for.
func (g *groupEntry) forgetImplied() { g.impliedPG, g.impliedOf = nil, nil }

// groupOfOne is the group's only pod when that pod is a group of one, else nil.
func (g *groupEntry) groupOfOne() *podEntry { return g.one }

// putPod files p under the group and dropPod removes the named pod; both keep one
// current, since every cycle asks every group for it.
func (g *groupEntry) putPod(p *podEntry) {
	g.pods.put(p)
	g.refreshOne()
}

func (g *groupEntry) dropPod(name string) {
	g.pods.drop(name)
	g.refreshOne()
}

func (g *groupEntry) refreshOne() {
	g.one = nil
	if p := g.pods.one; p != nil && p.oneOf != nil {
		g.one = p
	}
	if g.one == nil {
		g.forgetImplied()
	}
}

// implied reports whether the group's PodGroup is not written yet.
func (g *groupEntry) implied() bool {
	pg := g.podGroup()
	return pg != nil && pg != g.pg
}

// memberBased reports whether the group's shape comes from its spec (a Slurm job) rather
// than from its pods.
func (g *groupEntry) memberBased() bool { return g.pg != nil && len(g.pg.Spec.Members) > 0 }

// neverCreated reports whether a Slurm job's status says Running while none of its pods
// exists, is being made or was seen finished: the status was written as its pods were
// created and their creates failed (the API server went away), or the leader died before
// making them. Such a job never started; it is placed again, where it stayed Running with
// no pods for good. Pods that ran and were deleted do not leave it so: the lifecycle ends
// or requeues a job when its pods go. A partly created job whose pods this leader removed
// (strayed, partialcreate.go) is one too.
func (g *groupEntry) neverCreated() bool {
	return g.memberBased() && !g.created && (!g.ran || g.strayed) && g.pg.Status.Phase == v1alpha1.PodGroupRunning &&
		g.pods.len() == 0 && len(g.assumed) == 0
}

// notStarted reports whether the group is pending with nothing of it placed: only then do
// Slurm's hold and dependency keep it back (scontrol hold refuses a started job).
func (g *groupEntry) notStarted(pg *v1alpha1.PodGroup) bool {
	phase := pg.Status.Phase
	return !g.created && g.pods.len() == 0 && len(g.assumed) == 0 && (phase == "" || phase == v1alpha1.PodGroupPending)
}

// build converts the group to a core job. defaultPartition resolves a group that names
// none; refuse, when not nil, says why the group's namespace may not use its queue.
func (g *groupEntry) build(defaultPartition string, slurmPods bool, refuse func(*v1alpha1.PodGroup) string) {
	g.dirty = false
	g.include, g.blocked, g.job = false, nil, bridge.Job{}
	g.classes, g.switches, g.switchWait, g.rules, g.claims = g.classes[:0], 0, 0, nil, nil
	g.altParts, g.altCons = nil, nil
	g.bound = 0
	for _, p := range g.pods.all() {
		if p.node != "" && !p.terminating {
			g.bound++
		}
	}
	g.clearRequeued()
	pg := g.podGroup()
	if pg == nil || jobstate.PhaseFinal(pg.Status.Phase) || pg.DeletionTimestamp != nil {
		return
	}
	if g.notStarted(pg) {
		if code, msg, ok := slurmGate(pg); !ok {
			g.block(code, "%s", msg)
			return
		}
	}
	// Not only notStarted: the status pass may have said Running while the create failed.
	if !g.created && g.pods.len() == 0 && len(g.assumed) == 0 && g.waitsToRetryCreate(time.Now()) {
		return
	}
	// A queue is charged only for namespaces it admits. The webhook refuses the others at
	// admission; this catches what got past it (webhook off, a PodGroup written directly).
	// What already holds resources keeps them: it was placed when it was admitted.
	if refuse != nil && g.bound == 0 && len(g.assumed) == 0 && !g.created {
		if why := refuse(pg); why != "" {
			g.block(ReasonInvalidAccount, "%s", why)
			return
		}
	}
	j := bridge.Job{
		ID: g.key, Scope: pg.Namespace, Queue: pg.Spec.Queue, Partition: pg.Spec.Partition, QOS: pg.Spec.QOS,
		// A group that states neither preemptibility nor a QOS is preemptible, as KAI
		// treats training work: otherwise a queue without a quota could run nothing.
		Preemptible: pg.Spec.Preemptibility == v1alpha1.Preemptible || (pg.Spec.Preemptibility == "" && pg.Spec.QOS == ""),
		MinMember:   pg.Spec.MinMember, SubmitTime: pg.SubmitTime(),
		// A Slurm job's (sbatch --reservation), a written group's, or the one a derived
		// group or a group of one took from its pod or owner (podgrouper, ImpliedPodGroup).
		Reservation: v1alpha1.ReservationOf(pg.Labels, pg.Annotations),
	}
	if s := pg.Spec.Slurm; s != nil {
		j.User = s.User
		if s.TimeLimit != nil {
			j.TimeLimit = s.TimeLimit.Duration
		}
	}
	var ok bool
	if g.memberBased() {
		if !slurmPods && !g.created && g.pods.len() == 0 {
			g.block(ReasonNoPodFactory, "this scheduler cannot create pods for PodGroups that describe their members (Slurm jobs): no pod factory is configured")
			return
		}
		ok = g.buildFromMembers(&j)
	} else {
		ok = g.buildFromPods(&j)
	}
	if !ok {
		return
	}
	if !g.placement(pg, &j) {
		return
	}
	// KAI's rule: pods whose PriorityClass is worth NonPreemptiblePriority or more (KAI's
	// build and inference classes) make a non-preemptible group, unless the group or its
	// QOS says otherwise. An operator's priority below does not change it.
	if pg.Spec.Preemptibility == "" && pg.Spec.QOS == "" && j.Priority >= NonPreemptiblePriority {
		j.Preemptible = false
	}
	// An operator's priority adds to what the pods' PriorityClass gives;
	// a nice takes off. The sum saturates rather than wraps around. Either
	// outside int32, the core's priority, is left out.
	prio := int64(j.Priority)
	if p, err := v1alpha1.ParsePriority(pg.Annotations[v1alpha1.PriorityAnnotation]); err == nil && p == int64(int32(p)) {
		prio += p
	}
	if n, err := v1alpha1.ParseNice(pg.Annotations[v1alpha1.NiceAnnotation]); err == nil && n == int64(int32(n)) {
		prio -= n
	}
	j.Priority = int32(min(max(prio, math.MinInt32), math.MaxInt32))
	if j.Partition == "" {
		j.Partition = defaultPartition
	}
	g.trackStale(&j)
	g.job, g.include = j, true
}

// trackStale notes when a gang that once ran whole dropped below minMember, so the core
// can evict the rest after its grace.
// NonPreemptiblePriority is the PriorityClass value from which a group that states no
// preemptibility is non-preemptible, as KAI Scheduler documents it.
const NonPreemptiblePriority = 100

func (g *groupEntry) trackStale(j *bridge.Job) {
	running := int32(len(j.Running))
	switch {
	case running >= max(j.MinMember, 1):
		g.ranWhole, g.staleSince = true, time.Time{}
	case g.ranWhole && running > 0 && g.staleSince.IsZero():
		g.staleSince = time.Now()
	case running == 0:
		g.staleSince = time.Time{}
	}
	j.StaleSince = g.staleSince
}

func (g *groupEntry) block(code, format string, args ...any) bool {
	g.blocked = &bridge.Pending{Job: g.key, Code: code, Reason: fmt.Sprintf(format, args...)}
	return false
}

// buildFromMembers shapes a Slurm job from its spec; its pods, once created, are its
// running tasks. A started job is never placed again: its groups shrink to what runs.
func (g *groupEntry) buildFromMembers(j *bridge.Job) bool {
	pending := !g.created && (g.pg.Status.Phase == "" || g.pg.Status.Phase == v1alpha1.PodGroupPending || g.neverCreated())
	running := map[string]int32{}
	for _, p := range g.pods.all() {
		if p.node == "" || p.terminating {
			continue
		}
		grp := p.taskGroup
		if grp == "" {
			grp = g.pg.Spec.Members[0].Name
		}
		running[grp]++
		j.Running = append(j.Running, runningTask(p.name, grp, p.node, p.assignment, p.start))
	}
	for _, b := range g.assumed {
		running[b.Group]++
		j.Running = append(j.Running, assumedTask(b))
	}
	for _, m := range g.pg.Spec.Members {
		req, gpu, err := memberRequest(m)
		if err != nil {
			return g.block(bridge.ReasonBadConstraints, "member %s: %v", m.Name, err)
		}
		count := m.Count
		if !pending {
			count = running[m.Name]
		}
		if count > 0 {
			j.Groups = append(j.Groups, bridge.TaskGroup{Name: m.Name, Count: count, Request: req, GPU: gpu})
			g.classes = append(g.classes, nil) // set by placement
		}
	}
	sortRunning(j.Running)
	return len(j.Groups) > 0
}

// buildFromPods shapes a manifest gang from its pods: identical pods form one task group.
func (g *groupEntry) buildFromPods(j *bridge.Job) bool {
	names := make([]string, 0, g.pods.len())
	for name, p := range g.pods.all() {
		if !p.terminating || p.node != "" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return false
	}
	slices.Sort(names)
	if int32(len(names)) < j.MinMember {
		// A gang that started and lost members that finished still holds what its other
		// pods hold; only a gang that never started waits for all its pods to exist.
		if g.bound == 0 && len(g.assumed) == 0 && !g.ranWhole {
			return g.block(ReasonWaitingForPods, "%d of the %d pods the gang needs exist", len(names), j.MinMember)
		}
		j.MinMember = int32(len(names))
	}
	shapes := map[string]int{}
	if j.TimeLimit == 0 {
		j.TimeLimit = podsTimeLimit(g.pods, names)
	}
	for i, name := range names {
		p := g.pods.get(name)
		if p.bad != "" {
			return g.block(bridge.ReasonBadConstraints, "pod %s: %s", name, p.bad)
		}
		j.Labels = commonLabels(j.Labels, i == 0, p.labels)
		g.rules = addRules(g.rules, p.rules)
		if j.Partition == "" {
			j.Partition = p.partition
		}
		if j.Queue == "" {
			j.Queue = p.queue
		}
		if j.NodeSelector == nil {
			j.NodeSelector = p.selector
		}
		j.Priority = max(j.Priority, p.priority)
		shape := shapeKey(p)
		gi, ok := shapes[shape]
		if !ok {
			gi = len(j.Groups)
			shapes[shape] = gi
			req := p.request
			req.GPUMilli = 0
			j.Groups = append(j.Groups, bridge.TaskGroup{Name: fmt.Sprintf("g%d", gi), Request: req, GPU: p.gpu})
			g.classes = append(g.classes, p.cons)
			g.claims = append(g.claims, p.claims)
		}
		tg := &j.Groups[gi]
		tg.Count++
		switch b, assumed := g.assumed[name]; {
		case p.node != "":
			j.Running = append(j.Running, runningTask(name, tg.Name, p.node, p.assignment, p.start))
		case assumed:
			j.Running = append(j.Running, assumedTask(b))
		default:
			tg.PendingTasks = append(tg.PendingTasks, name)
		}
	}
	return true
}

// podsTimeLimit is a manifest gang's time limit: the longest activeDeadlineSeconds of its
// pods, or none (0) when one of them has none. A Slurm job's comes from its spec.
func podsTimeLimit(pods podSet, names []string) time.Duration {
	var limit time.Duration
	for _, name := range names {
		d := pods.get(name).deadline
		if d == 0 {
			return 0
		}
		limit = max(limit, d)
	}
	return limit
}

func shapeKey(p *podEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d/%d/%s/%d/%d/%d/%s", p.request.CPUMilli, p.request.MemoryBytes, p.request.GPUMilli,
		p.gpu.Kind, p.gpu.Devices, p.gpu.Milli, p.gpu.MemoryMiB, p.consKey())
	for _, claim := range p.claims { // pods with their own volumes may need nodes of their own
		fmt.Fprintf(&b, "/pvc=%s", claim)
	}
	for _, q := range p.request.Extended {
		fmt.Fprintf(&b, "/%s=%d", q.Name, q.Value)
	}
	return b.String()
}

func runningTask(name, group, node string, a *v1alpha1.GPUAssignment, start time.Time) bridge.RunningTask {
	rt := bridge.RunningTask{Name: name, Group: group, Node: node, Start: start}
	if a != nil {
		for _, d := range a.GPUs {
			rt.GPUs = append(rt.GPUs, d.Index)
		}
		if a.Portion < 1 {
			rt.GPUMilli = int32(a.Portion*1000 + 0.5)
		}
		rt.GPUMemoryMiB = a.GPUMemoryMiB
	}
	return rt
}

func assumedTask(b bridge.Bind) bridge.RunningTask {
	rt := bridge.RunningTask{Name: b.Task, Group: b.Group, Node: b.Node, GPUMilli: b.GPUMilli, GPUMemoryMiB: b.GPUMemoryMiB}
	if rt.GPUMilli >= 1000 {
		rt.GPUMilli = 0
	}
	for _, d := range b.GPUs {
		rt.GPUs = append(rt.GPUs, d.Index)
	}
	return rt
}

func sortRunning(rs []bridge.RunningTask) {
	slices.SortFunc(rs, func(a, b bridge.RunningTask) int { return strings.Compare(a.Name, b.Name) })
}

// memberRequest converts a PodGroup member set's per-pod request.
func memberRequest(m v1alpha1.MemberSet) (bridge.Resources, bridge.GPURequest, error) {
	req := resourcesOf(m.Resources)
	req.Extended = addQuantity(req.Extended, podsResource, 1)
	whole := req.GPUMilli / 1000
	req.GPUMilli = 0
	s := m.GPUSharing
	if s == nil {
		return req, wholeRequest(whole), nil
	}
	ann := map[string]string{}
	if s.Fraction != "" {
		ann[v1alpha1.GPUFractionAnnotation] = s.Fraction
	}
	if s.Memory != nil {
		ann[v1alpha1.GPUMemoryAnnotation] = s.Memory.String()
	}
	if s.Devices > 1 {
		ann[v1alpha1.GPUFractionNumDevicesAnnotation] = fmt.Sprint(s.Devices)
	}
	gpu, err := gpuRequest(whole, ann)
	return req, gpu, err
}

func wholeRequest(n int64) bridge.GPURequest {
	if n <= 0 {
		return bridge.GPURequest{}
	}
	return bridge.GPURequest{Kind: bridge.GPUWhole, Devices: int32(n)}
}
