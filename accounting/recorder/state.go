package recorder

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// state is the recorder's view of the cluster: PodGroups, the pods that belong to them,
// which groups changed since the last write, and what was written.
type state struct {
	schedulerName string
	clock         func() time.Time

	mu      sync.Mutex
	groups  map[string]*v1alpha1.PodGroup // by namespace/name
	owners  map[types.UID][]string        // owner UID -> groups it owns
	pods    map[string]*corev1.Pod        // Sluice's pods, by namespace/name
	links   map[string]*linkSet           // podLinks key -> pods (namespace/name) it links
	dirty   map[string]bool
	deleted map[string]*v1alpha1.PodGroup // deleted groups not yet closed in the ledger
	// lastPod is a bare pod's last state, by its group, once the pod is gone: nothing
	// recreates it, so how it went (evicted, drained off a fault, deleted) ends its job,
	// which a group derived without it could not tell. Kept until the group is closed.
	lastPod map[string]*corev1.Pod
	last    map[int64]uint64      // job id -> fingerprint of the last write
	known   map[int64]*ledgerHeld // job id -> what the ledger holds; nil when nothing

	// Pending Slurm jobs in submit batches (batches.go).
	batched   map[string]*batchedJob // by group key: jobs some batch holds
	batchKeys map[types.UID][]string // batch -> the group keys it holds
	unstored  map[string]*batchedJob // jobs no batch holds, never seen stored: to close

	nodes     map[string]accounting.Node // node capacity to write
	wroteNode map[string]accounting.Node // what was last written per node
	liveNodes map[string]bool            // nodes the cluster has now

	resvs map[string]resvSeen // reservations seen since the last write (reservations.go)
	// wroteResv is what was last written per reservation; only the flush reads and writes it.
	wroteResv map[string]string
}

func newState(schedulerName string, clock func() time.Time) *state {
	return &state{
		schedulerName: schedulerName, clock: clock,
		nodes: map[string]accounting.Node{}, wroteNode: map[string]accounting.Node{}, liveNodes: map[string]bool{},
		resvs: map[string]resvSeen{}, wroteResv: map[string]string{},
		groups: map[string]*v1alpha1.PodGroup{}, owners: map[types.UID][]string{},
		pods: map[string]*corev1.Pod{}, links: map[string]*linkSet{}, dirty: map[string]bool{}, deleted: map[string]*v1alpha1.PodGroup{},
		lastPod: map[string]*corev1.Pod{}, last: map[int64]uint64{}, known: map[int64]*ledgerHeld{},
		batched: map[string]*batchedJob{}, batchKeys: map[types.UID][]string{}, unstored: map[string]*batchedJob{},
	}
}

func key(ns, name string) string { return ns + "/" + name }

func (s *state) setGroup(pg *v1alpha1.PodGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(pg.Namespace, pg.Name)
	if _, seen := s.groups[k]; !seen {
		for _, o := range pg.OwnerReferences {
			s.owners[o.UID] = append(s.owners[o.UID], k)
		}
	}
	s.groups[k] = pg
	s.sawStoredLocked(k)
	s.dirty[k] = true
}

func (s *state) deleteGroup(pg *v1alpha1.PodGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(pg.Namespace, pg.Name)
	for _, o := range pg.OwnerReferences {
		s.owners[o.UID] = remove(s.owners[o.UID], k)
		if len(s.owners[o.UID]) == 0 {
			delete(s.owners, o.UID)
		}
	}
	delete(s.groups, k)
	s.dirty[k] = true
	// A job whose pod implies its group is not over while the pod lives on: the
	// implied group stands for the written one again (group names are never shared: it
	// is the same job).
	if _, p := s.impliedLocked(k); p != nil && p.DeletionTimestamp == nil {
		return
	}
	s.deleted[k] = pg
}

func remove(xs []string, x string) []string {
	out := xs[:0]
	for _, v := range xs {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

func (s *state) setPod(p *corev1.Pod) {
	if p.Spec.SchedulerName != s.schedulerName {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pk := key(p.Namespace, p.Name)
	if old := s.pods[pk]; old != nil {
		s.unlinkLocked(old)
	}
	s.pods[pk] = p
	for _, l := range podLinks(p) {
		if s.links[l] == nil {
			s.links[l] = &linkSet{}
		}
		s.links[l].add(pk)
	}
	s.markPodGroupsLocked(p)
}

func (s *state) deletePod(p *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.pods[key(p.Namespace, p.Name)]
	if old == nil {
		return
	}
	s.unlinkLocked(old)
	delete(s.pods, key(p.Namespace, p.Name))
	// Its kubelet's final delete (grace 0) moved deletionTimestamp past its stop; the
	// request the recorder saw first decides how it ended.
	p = jobstate.WithFirstDeletion(old, p)
	s.markPodGroupsLocked(p)
	if len(p.OwnerReferences) == 0 {
		for _, k := range s.groupsOfLocked(p) {
			s.lastPod[k] = p
		}
	}
	s.endImpliedLocked(p)
}

func (s *state) unlinkLocked(p *corev1.Pod) {
	pk := key(p.Namespace, p.Name)
	for _, l := range podLinks(p) {
		if set := s.links[l]; set != nil && set.remove(pk) {
			delete(s.links, l)
		}
	}
}

// podLinks index a pod by what can tie it to a group: the group its annotation names,
// else its owners' UIDs and its own (see podOwnerUIDs).
func podLinks(p *corev1.Pod) []string {
	if g := p.Annotations[v1alpha1.PodGroupAnnotation]; g != "" {
		return []string{"group:" + key(p.Namespace, g)}
	}
	var out []string
	for _, uid := range podOwnerUIDs(p) {
		out = append(out, "uid:"+string(uid))
	}
	return out
}

// podsOfLocked are the pods of group k, found through the link index.
func (s *state) podsOfLocked(k string, pg *v1alpha1.PodGroup) []*corev1.Pod {
	var out []*corev1.Pod
	add := func(link string) {
		for pk := range s.links[link].all() {
			if p := s.pods[pk]; p != nil && p.Namespace == pg.Namespace {
				out = append(out, p)
			}
		}
	}
	add("group:" + k)
	for _, o := range pg.OwnerReferences {
		add("uid:" + string(o.UID))
	}
	return out
}

func (s *state) markPodGroupsLocked(p *corev1.Pod) {
	for _, k := range s.groupsOfLocked(p) {
		s.dirty[k] = true
	}
}

// podOwnerUIDs are the UIDs that tie a pod without a group annotation to the group the
// pod grouper made for it: its controller's (a Job's pods) and its own (a bare pod).
func podOwnerUIDs(p *corev1.Pod) []types.UID {
	uids := []types.UID{p.UID}
	for _, o := range p.OwnerReferences {
		uids = append(uids, o.UID)
	}
	return uids
}

// groupsOfLocked are the keys of the groups (live or deleted) pod p belongs to.
func (s *state) groupsOfLocked(p *corev1.Pod) []string {
	if g := p.Annotations[v1alpha1.PodGroupAnnotation]; g != "" {
		return []string{key(p.Namespace, g)}
	}
	var out []string
	for _, uid := range podOwnerUIDs(p) {
		out = append(out, s.owners[uid]...)
	}
	for k, pg := range s.deleted {
		for _, o := range pg.OwnerReferences {
			if pg.Namespace == p.Namespace && slices.Contains(podOwnerUIDs(p), o.UID) {
				out = append(out, k)
			}
		}
	}
	return out
}

// groupWork is one changed group with its pods, taken out of the state to derive.
type groupWork struct {
	key     string
	id      int64
	pg      *v1alpha1.PodGroup
	pods    []*corev1.Pod
	deleted bool
	// batched: a pending Slurm job's batch copy (batches.go), pg decoded by decodeBatched;
	// unstored: one dropped from its batches, never stored, closed once the API server
	// confirms it has no PodGroup.
	batched  *batchedJob
	unstored bool
}

// takeDirty returns the changed groups and clears the dirty set.
func (s *state) takeDirty() []groupWork {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.dirty) == 0 {
		return nil
	}
	var out []groupWork
	add := func(k string, pg *v1alpha1.PodGroup, deleted bool) {
		if awaitsJobID(pg) {
			return // recorded under its id once it has one: never under two
		}
		pods := s.podsOfLocked(k, pg)
		if p := s.lastPod[k]; len(pods) == 0 && p != nil {
			pods = []*corev1.Pod{p}
		}
		out = append(out, groupWork{key: k, id: JobID(pg), pg: pg, pods: pods, deleted: deleted})
	}
	for k := range s.dirty {
		if pg := s.groups[k]; pg != nil {
			add(k, pg, false)
			continue
		}
		gone := s.deleted[k]
		if gone != nil {
			add(k, gone, true)
		}
		// A job a bare pod implies has no PodGroup until one has to be written; pods
		// of other groups not seen (yet) wait for theirs.
		if ig, _ := s.impliedLocked(k); ig != nil && gone == nil {
			add(k, ig, false)
			continue
		}
		// A pending Slurm job kept in a submit batch has no PodGroup yet either.
		if w, ok := s.batchedLocked(k); ok && gone == nil {
			out = append(out, w)
		}
	}
	s.dirty = map[string]bool{}
	sort.Slice(out, func(a, b int) bool { return out[a].key < out[b].key })
	return out
}

// requeue marks groups dirty again after a failed write.
func (s *state) requeue(work []groupWork) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range work {
		s.dirty[w.key] = true
	}
}

func (s *state) unknownIDs(work []groupWork) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for _, w := range work {
		if _, ok := s.known[w.id]; !ok {
			ids = append(ids, w.id)
		}
	}
	return ids
}

func (s *state) setKnown(ids []int64, jobs []accounting.Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.known[id] = nil
	}
	for _, j := range jobs {
		s.known[j.JobID] = heldByLedger(j)
	}
}

// ledgerHeld is the part of a ledger record derive reads back (its prev): the allocation
// and request a job's gone pods no longer show, the requeues already counted, and how
// the run ended. The recorder keeps one for every job the cluster holds, so it keeps
// only that: 176 bytes against the whole record's 448 (names, account, times).
type ledgerHeld struct {
	state                accounting.JobState
	end                  time.Time
	exitCode, exitSignal int32
	requeues             int32
	requested, allocated accounting.TRES
	nodeList             string
}

func heldByLedger(j accounting.Job) *ledgerHeld {
	return &ledgerHeld{state: j.State, end: j.End, exitCode: int32(j.ExitCode), exitSignal: int32(j.ExitSignal),
		requeues: int32(j.RequeueCount), requested: j.Requested, allocated: j.Allocated, nodeList: j.NodeList}
}

// record is the held part as a ledger record of job id, the rest left empty.
func (h *ledgerHeld) record(id int64) *accounting.Job {
	return &accounting.Job{JobID: id, State: h.state, End: h.end, ExitCode: int(h.exitCode), ExitSignal: int(h.exitSignal),
		RequeueCount: int(h.requeues), Requested: h.requested, Allocated: h.allocated, NodeList: h.nodeList}
}

// knownJob is what the ledger holds of job id as far as derive reads it; nil when nothing.
func (s *state) knownJob(id int64) *accounting.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.known[id]; h != nil {
		return h.record(id)
	}
	return nil
}

func (s *state) unchanged(id int64, fp uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, ok := s.last[id]
	return ok && last == fp
}

// written is one job's write, remembered once the store took it.
type written struct {
	key      string
	job      accounting.Job
	fp       uint64
	deleted  bool
	requeues int
}

func (s *state) markWritten(ws []written) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range ws {
		if w.deleted {
			delete(s.deleted, w.key)
			delete(s.unstored, w.key)
			delete(s.lastPod, w.key)
			delete(s.last, w.job.JobID)
			delete(s.known, w.job.JobID)
			continue
		}
		s.recordedLocked(w.key)
		h := heldByLedger(w.job)
		h.requeues = max(h.requeues, int32(w.requeues))
		s.last[w.job.JobID] = w.fp
		s.known[w.job.JobID] = h
	}
}

// fingerprint identifies a derived record and history, so an unchanged group is not
// written again.
func fingerprint(j accounting.Job, ts []accounting.Transition) uint64 {
	h := fnv.New64a()
	b, _ := json.Marshal(struct { // plain values: cannot fail
		J  accounting.Job
		TS []accounting.Transition
	}{j, ts})
	h.Write(b)
	return h.Sum64()
}
