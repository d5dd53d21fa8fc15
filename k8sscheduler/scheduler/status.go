package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// groupStatus is the scheduler's memory of one PodGroup's status.
type groupStatus struct {
	pendingSince time.Time // when the group was first seen waiting, zero when it is not
	written      statusKey // what was last written (or found already there)
	evicted      *bridge.Eviction
	createErr    string
	// evictAfter is a group of one's eviction, held until its PodGroup is written.
	evictAfter func(context.Context)
	// noted is why a job still in its submit batch waits, as its batch is to say
	// (batchreasons.go); kept apart from written, which is what its PodGroup says once
	// stored.
	noted v1alpha1.BatchedWait
}

// quiet: nothing was ever written, waited for or evicted.
func (st *groupStatus) quiet() bool {
	return st.written == (statusKey{}) && st.pendingSince.IsZero() && st.evicted == nil && st.evictAfter == nil && st.createErr == ""
}

func (st *groupStatus) takeEvictAfter() func(context.Context) {
	f := st.evictAfter
	st.evictAfter = nil
	return f
}

// statusKey is the part of a PodGroup's status the scheduler owns; a write happens only
// when it changes.
type statusKey struct {
	phase   v1alpha1.PodGroupPhase
	sched   metav1.ConditionStatus
	reason  string
	message string
	evicted string // "kind: reason" of the last eviction
}

// currentKey reads the scheduler-owned part of the status as stored.
func currentKey(pg *v1alpha1.PodGroup) statusKey {
	k := statusKey{phase: pg.Status.Phase}
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionScheduled); c != nil {
		k.sched, k.reason, k.message = c.Status, c.Reason, c.Message
	}
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionEvicted); c != nil {
		k.evicted = c.Reason + ": " + c.Message
	}
	return k
}

// groupStatusLocked decides the group's status after a cycle and returns the write, or nil
// when nothing changed. A waiting group is told why only after PendingStatusDelay, so that
// groups placed at once cost no pending write. A manifest group placed before it was ever
// told it waits gets no write at all: its pods' bindings (spec.nodeName and the PodScheduled
// condition the API server sets) already say it runs, and a status patch per group would
// be a third of the scheduler's writes for single-pod groups. Slurm groups always get
// phase Running, which squeue and the Slurm lifecycle read.
//
// A group of one has no PodGroup until it needs a status: the write that would give it one
// creates it (materializeWork), and a group of one placed at once never has one.
func (s *Scheduler) groupStatusLocked(g *groupEntry, p bridge.Pending, waits bool, now time.Time) func(context.Context) {
	if g.pg == nil && g.bound > 0 && !waits && g.status.quiet() {
		g.forgetImplied()
		return nil // placed with nothing ever to say: most groups, decided without reaching their pod
	}
	pg := g.podGroup()
	if pg == nil || jobstate.PhaseFinal(pg.Status.Phase) || pg.DeletionTimestamp != nil {
		return nil
	}
	if g.batched() {
		// A job still in its submit batch has no object of its own to say why it waits:
		// its batch says it (batchreasons.go). Once it starts, createWork stores its
		// PodGroup and the informer's copy gets the status.
		s.noteBatchedLocked(g, p, waits, now)
		return nil
	}
	if g.status.createErr != "" && waits {
		p = bridge.Pending{Job: g.key, Code: v1alpha1.ReasonPodCreateFailed, Reason: g.status.createErr}
	}
	want := currentKey(pg)
	if g.status.written != (statusKey{}) {
		want = g.status.written
	}
	if g.status.evicted != nil {
		want.evicted = string(g.status.evicted.Kind) + ": " + evictionMessage(g.status.evicted)
	}
	minMember := max(pg.Spec.MinMember, 1)
	started := g.bound >= minMember
	if g.memberBased() {
		started = g.created || (pg.Status.Phase == v1alpha1.PodGroupRunning && !g.neverCreated())
	}
	switch {
	case started:
		g.status.pendingSince = time.Time{}
		if !g.memberBased() && want == (statusKey{}) {
			return nil
		}
		want.phase, want.sched, want.reason = v1alpha1.PodGroupRunning, metav1.ConditionTrue, "Scheduled"
		want.message = fmt.Sprintf("all %d pods of the gang are placed", minMember)
	case waits:
		if g.status.pendingSince.IsZero() {
			g.status.pendingSince = now
		}
		if now.Sub(g.status.pendingSince) >= s.cfg.PendingStatusDelay {
			// Slurm's "ReqNodeNotAvail, Reserved for maintenance" has spaces, which a
			// condition reason may not: written ReqNodeNotAvail,ReservedForMaintenance, and
			// spelled back for every view by jobstate.
			want.phase, want.sched, want.reason, want.message = v1alpha1.PodGroupPending, metav1.ConditionFalse, conditionReason(p.Code), p.Reason
		}
	default: // binds in flight, or nothing to do
		g.status.pendingSince = time.Time{}
	}
	if want == currentKey(pg) || want == g.status.written {
		g.status.written = want
		return nil
	}
	prev := g.status.written
	g.status.written = want
	g.status.createErr = ""
	if pg != g.pg {
		return s.materializeWork(g, want, prev, g.status.takeEvictAfter())
	}
	return s.groupStatusWork(pg, want, prev, g.running())
}

func evictionMessage(e *bridge.Eviction) string {
	return fmt.Sprintf("pod %s%s: %s", e.Task, forJob(e.ForJob), e.Reason)
}

// running is the group's running pod count for its status: a Slurm job's pods are
// created bound, all at once, when it starts, so the write that says it runs counts them
// before the cache has seen them (it counted none: the Running column showed 0).
func (g *groupEntry) running() int32 {
	if g.memberBased() && g.created {
		return max(g.bound, g.pg.Spec.MinMember)
	}
	return g.bound
}

// groupStatusWork writes the status with one merge patch, and an Event when the group
// newly waits for a different reason. The patch carries the resourceVersion the status
// was decided on: a merge patch replaces the whole conditions list, so one made from a
// stale copy would drop a condition another writer (the Slurm lifecycle's Eligible, the
// submit queue's Stored) added meanwhile. A conflict leaves the write to the next cycle,
// which decides again on the newer copy.
func (s *Scheduler) groupStatusWork(pg *v1alpha1.PodGroup, want, prev statusKey, bound int32) func(context.Context) {
	return func(ctx context.Context) {
		conds := append([]metav1.Condition(nil), pg.Status.Conditions...)
		if want.sched != "" {
			meta.SetStatusCondition(&conds, metav1.Condition{Type: v1alpha1.PodGroupConditionScheduled, Status: want.sched,
				Reason: conditionReason(want.reason), Message: want.message, ObservedGeneration: pg.Generation})
		}
		if want.evicted != "" {
			reason, msg, _ := cutReason(want.evicted)
			meta.SetStatusCondition(&conds, metav1.Condition{Type: v1alpha1.PodGroupConditionEvicted, Status: metav1.ConditionTrue,
				Reason: conditionReason(reason), Message: msg, ObservedGeneration: pg.Generation})
			if c := meta.FindStatusCondition(conds, v1alpha1.PodGroupConditionEvicted); c != nil && want.evicted != prev.evicted {
				c.LastTransitionTime = metav1.Now() // a new eviction, even of the same kind
			}
		}
		err := jobstate.WriteStatus(ctx, s.crs.Status(), pg, func(st *v1alpha1.PodGroupStatus) {
			st.Phase, st.Conditions, st.Running = want.phase, conds, bound
			if want.phase == v1alpha1.PodGroupRunning && st.StartTime == nil {
				now := metav1.Now()
				st.StartTime = &now
			}
		})
		if err != nil {
			klog.FromContext(ctx).Info("writing PodGroup status failed", "podGroup", pg.Namespace+"/"+pg.Name, "err", err)
			s.unwrite(pg.Namespace+"/"+pg.Name, prev)
			return
		}
		if want.sched == metav1.ConditionFalse && want.reason != prev.reason {
			s.events.Event(pg, corev1.EventTypeWarning, conditionReason(want.reason), want.message)
		}
	}
}

// unwrite restores what was written before a failed write, so the next cycle tries again.
func (s *Scheduler) unwrite(key string, prev statusKey) {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	if g := s.cache.groups[key]; g != nil {
		g.status.written = prev
	}
}

func cutReason(s string) (string, string, bool) {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == ':' && s[i+1] == ' ' {
			return s[:i], s[i+2:], true
		}
	}
	return s, "", false
}

// conditionReason makes a core reason code a valid condition reason (CamelCase letters);
// most of the core's codes already are; "stale-gang" style eviction kinds and the
// maintenance reason ("ReqNodeNotAvail, Reserved for maintenance") are not.
func conditionReason(code string) string {
	out := make([]byte, 0, len(code))
	upper := true
	for i := 0; i < len(code); i++ {
		ch := code[i]
		switch {
		case ch == '-' || ch == '_' || ch == ' ':
			upper = true
			continue
		case upper && ch >= 'a' && ch <= 'z':
			ch -= 'a' - 'A'
		}
		upper = false
		out = append(out, ch)
	}
	if len(out) == 0 {
		return "Unknown"
	}
	return string(out)
}

// queueBook remembers the Queue statuses written, to write only changes and at most once
// per QueueStatusPeriod.
type queueBook struct {
	last    time.Time
	written map[string]string // queue -> status JSON
}

// queueStatus returns the Queue status writes for this cycle's fair-share standing.
func (s *Scheduler) queueStatus(shares []bridge.QueueShare, now time.Time) []func(context.Context) {
	s.metrics.observeShares(shares)
	if now.Sub(s.queueBook.last) < s.cfg.QueueStatusPeriod {
		return nil
	}
	s.queueBook.last = now
	per := map[string][]bridge.QueueShare{}
	for _, sh := range shares {
		per[sh.Queue] = append(per[sh.Queue], sh)
	}
	s.cache.mu.Lock()
	names := make([]string, 0, len(s.cache.queues))
	for name := range s.cache.queues {
		names = append(names, name)
	}
	s.cache.mu.Unlock()
	sort.Strings(names)
	var out []func(context.Context)
	for _, name := range names {
		st := queueStatusOf(per[name])
		body, _ := json.Marshal(map[string]any{"status": st})
		if s.queueBook.written[name] == string(body) {
			continue
		}
		s.queueBook.written[name] = string(body)
		out = append(out, func(ctx context.Context) {
			q := &v1alpha1.Queue{}
			q.Name = name
			if err := s.crs.Status().Patch(ctx, q, client.RawPatch(types.MergePatchType, body)); err != nil {
				klog.FromContext(ctx).Info("writing Queue status failed", "queue", name, "err", err)
			}
		})
	}
	return out
}

// queueStatusOf sums a queue's per-partition standing; fields other than the ones the
// scheduler owns (conditions) are left out of the patch.
func queueStatusOf(shares []bridge.QueueShare) map[string]any {
	var alloc, req, fair bridge.Resources
	parts := make([]v1alpha1.QueuePartitionStatus, 0, len(shares))
	for _, sh := range shares {
		addShare(&alloc, sh.Allocated)
		addShare(&req, sh.Requested)
		addShare(&fair, sh.FairShare)
		parts = append(parts, v1alpha1.QueuePartitionStatus{Partition: sh.Partition,
			Allocated: resourceAmounts(sh.Allocated), Requested: resourceAmounts(sh.Requested), FairShare: resourceAmounts(sh.FairShare)})
	}
	return map[string]any{"allocated": resourceAmounts(alloc), "requested": resourceAmounts(req),
		"fairShare": resourceAmounts(fair), "partitions": parts}
}

func addShare(into *bridge.Resources, r bridge.Resources) {
	into.GPUMilli += r.GPUMilli
	into.CPUMilli += r.CPUMilli
	into.MemoryBytes += r.MemoryBytes
}
