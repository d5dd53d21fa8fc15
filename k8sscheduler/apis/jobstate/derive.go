package jobstate

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// View is what every reader shows of one job.
type View struct {
	State State
	// Reason is Slurm's reason for the state; "None" for a pending job, whose reason
	// (why it waits) the Slurm API reads from the scheduler's conditions.
	Reason string
	// Requeued: a pending job that ran before and was requeued (squeue's REQUEUED flag).
	Requeued bool
	// Completing: a job that ended while some of its pods still terminate (Slurm's
	// COMPLETING flag: squeue and scontrol show COMPLETING, sacct the final state).
	Completing bool
	// ExitCode and Signal of a job that ended: its status's exit code, else its first
	// failed pod's.
	ExitCode, Signal int32
	// Start is when the current (or last) run began; zero while the job is pending and
	// for a job that ended without running.
	Start time.Time
	// End is when the job ended; zero unless State is final.
	End time.Time
	// Nodes the current run's pods are bound to, sorted; nil while pending.
	Nodes []string
	// Rule names the rule of the table that decided State.
	Rule string
}

// facts are what the rules look at, gathered once.
type facts struct {
	pg        *v1alpha1.PodGroup
	run       []*corev1.Pod // the current run's pods: bound, not being deleted before they ended
	all       []*corev1.Pod
	minMember int
	ended     bool // the run holds every member (or one failed) and each of its pods ended
	failure   Failure
	failed    bool // a pod of the run failed
	succeeded int  // the run's pods that succeeded
	evicted   *metav1.Condition
	// deleting: the workload is being deleted before its run ended (a manifest PodGroup
	// with a deletion time, or a bare pod's pod), so its end is its cancellation, or
	// the disruption that deleted the bare pod.
	deleting State
}

// rule maps facts to a state. The table is read top to bottom; the first rule that
// holds decides. A status phase the lifecycle, scancel or the scheduler wrote as final
// wins; otherwise the pods decide.
type rule struct {
	name  string
	when  func(f *facts) bool
	state func(f *facts) State
}

func phaseIs(p v1alpha1.PodGroupPhase) func(*facts) bool {
	return func(f *facts) bool { return f.pg.Status.Phase == p }
}

// Rules is the one table that maps a job's objects to its Slurm state. Every row is
// covered by derive_test.go.
var rules = []rule{
	{"phase Succeeded", phaseIs(v1alpha1.PodGroupSucceeded), constant(Completed)},
	{"phase Failed", phaseIs(v1alpha1.PodGroupFailed), failedPhase},
	{"phase Cancelled", phaseIs(v1alpha1.PodGroupCancelled), constant(Cancelled)},
	{"phase TimedOut", phaseIs(v1alpha1.PodGroupTimedOut), constant(Timeout)},
	{"phase Preempted", phaseIs(v1alpha1.PodGroupPreempted), constant(Preempted)},
	// Nothing recreates an evicted bare pod: the eviction ended its job.
	{"bare pod evicted", func(f *facts) bool { return f.evicted != nil && barePod(f.pg) && len(f.run) == 0 }, constant(Preempted)},
	// Deleting a manifest workload (or a bare pod) that has not ended cancels it, as
	// scancel does; a bare pod taken by a disruption ends with the disruption.
	{"workload deleted", func(f *facts) bool { return f.deleting != "" }, func(f *facts) State { return f.deleting }},
	// A job ends when every one of its run's pods has ended, not at the first failure:
	// one task OOM-killed while others run leaves the job RUNNING (Slurm ends a job
	// when its batch step does); the Slurm lifecycle ends a Slurm job at its first
	// failed task by writing phase Failed, which the rule above then reads.
	{"every pod of the run ended", func(f *facts) bool { return f.ended }, runEnd},
	{"phase Running", phaseIs(v1alpha1.PodGroupRunning), constant(Running)},
	{"the run's pods are bound", func(f *facts) bool { return len(f.run) >= f.minMember }, constant(Running)},
	{"otherwise", func(*facts) bool { return true }, constant(Pending)},
}

func constant(s State) func(*facts) State { return func(*facts) State { return s } }

// failedPhase: the end reason the lifecycle wrote, else (a job it marked lost with its
// node before end reasons were written: no exit code) NODE_FAIL, else the pods' reason.
func failedPhase(f *facts) State {
	st := f.pg.Status
	switch {
	case st.EndReason != "":
		return FailedState(st.EndReason)
	case f.pg.Spec.Slurm != nil && st.ExitCode == nil:
		return NodeFail
	}
	if s := runEnd(f); s != Completed {
		return s
	}
	return Failed // its pods no longer show how
}

// runEnd: COMPLETED when no pod failed, or when a manifest workload's controller
// replaced its failed pods until every member succeeded (a Job within its backoffLimit:
// the Job completed); else the state the failure's reason (or a node failure that
// removed a pod) gives.
func runEnd(f *facts) State {
	if f.pg.Spec.Slurm == nil && !barePod(f.pg) && f.succeeded >= f.minMember {
		return Completed
	}
	why := f.failure.Reason
	if d := nodeFailure(f.pg, f.all); d != "" {
		why = d
	}
	if !f.failed && why == "" {
		return Completed
	}
	return FailedState(why)
}

// Derive is job pg's view from its PodGroup and the pods that belong to it (any order;
// terminating pods and, for a Slurm job, earlier runs' pods included). now stands in for
// an end time nothing recorded.
func Derive(pg *v1alpha1.PodGroup, pods []*corev1.Pod, now time.Time) View {
	f := gather(pg, pods)
	var v View
	for _, r := range rules {
		if r.when(f) {
			v.State, v.Rule = r.state(f), r.name
			break
		}
	}
	v.Reason = reasons[v.State]
	for _, fl := range flags {
		if fl.when(f, &v) {
			fl.set(&v)
		}
	}
	if v.State == Pending {
		v.Reason = PendingReason(pg, now)
		return v
	}
	v.Start = startOf(f)
	if v.Start.IsZero() && !v.State.Final() {
		// Running, and nothing says since when yet (the status write and the pods' starts
		// are on their way): it started just now, never "at 0", which reads as before any
		// begin time. A job that ended without running keeps no start.
		v.Start = now
	}
	v.Nodes = nodesOf(f.run)
	if !v.State.Final() {
		return v
	}
	v.End = endOf(f, now)
	if v.State != Completed {
		v.ExitCode, v.Signal = f.failure.ExitCode, f.failure.Signal
	}
	if c := pg.Status.ExitCode; c != nil {
		v.ExitCode = *c
	}
	switch v.Rule {
	case "bare pod evicted":
		v.End = f.evicted.LastTransitionTime.Time
	case "workload deleted": // a bare pod's deletion, else its workload's
		if v.End = DeletionRequested(pods[0]); v.End.IsZero() || !barePod(pg) {
			v.End = pg.DeletionTimestamp.Time
		}
	}
	return v
}

// flags is the table of Slurm's state flags a view adds to the state the rules decided;
// each row that holds sets its flag. Every row is covered by derive_test.go.
var flags = []struct {
	name State
	when func(f *facts, v *View) bool
	set  func(v *View)
}{
	{Requeued, func(f *facts, v *View) bool { return v.State == Pending && f.pg.Status.Requeues > 0 },
		func(v *View) { v.Requeued = true }},
	// The job ended, but a pod of it (of any run) has not: it is being deleted, or the
	// lifecycle is about to delete it.
	{Completing, func(f *facts, v *View) bool { return v.State.Final() && slices.ContainsFunc(f.all, live) },
		func(v *View) { v.Completing = true }},
}

// live: the pod holds its node and has not ended.
func live(p *corev1.Pod) bool { return p.Spec.NodeName != "" && !Ended(p) }

func gather(pg *v1alpha1.PodGroup, pods []*corev1.Pod) *facts {
	f := &facts{pg: pg, all: pods, minMember: max(int(pg.Spec.MinMember), 1)}
	for _, p := range pods {
		// A pod being deleted before it ended is being replaced (or its workload
		// cancelled); one that ended before still tells how the run ended.
		if p.Spec.NodeName != "" && (p.DeletionTimestamp == nil || endedBeforeDeletion(p)) && inCurrentRun(pg, p) {
			f.run = append(f.run, p)
		}
	}
	f.failure, f.failed = FirstFailure(f.run)
	// A gang that lost members (a Job's controller removes the rest of a failed Job's
	// pods) ends with the failure.
	f.ended = len(f.run) >= f.minMember || len(f.run) > 0 && f.failed
	for _, p := range f.run {
		f.ended = f.ended && Ended(p) && !uncounted(p)
		if p.Status.Phase == corev1.PodSucceeded {
			f.succeeded++
		}
	}
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionEvicted); c != nil && c.Status == metav1.ConditionTrue {
		f.evicted = c
	}
	f.deleting = deletionEnd(pg, pods)
	return f
}

// jobTrackingFinalizer is the finalizer the Job controller keeps on a Job's pod until it
// has counted the pod's end in the Job's status (and created its replacement, when the
// Job retries a failed pod).
const jobTrackingFinalizer = "batch.kubernetes.io/job-tracking"

// uncounted: a failed pod whose Job has not yet decided whether to retry it; until it
// has, the failure does not end the run.
func uncounted(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && slices.Contains(p.Finalizers, jobTrackingFinalizer)
}

// deletionEnd is the state a manifest workload being deleted before its run ended ends in:
// CANCELLED, or for a bare pod taken by a disruption (a drain's eviction, a node
// failure) that disruption's state; "" when it is not being deleted or its run ended.
func deletionEnd(pg *v1alpha1.PodGroup, pods []*corev1.Pod) State {
	if pg.Spec.Slurm != nil || len(pods) == 0 || !slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return !endedBeforeDeletion(p) }) {
		return ""
	}
	bare := barePod(pg) && pods[0].DeletionTimestamp != nil
	if d := Disruption(pods[0]); bare && d != "" {
		return d
	}
	if pg.DeletionTimestamp != nil || bare {
		return Cancelled
	}
	return ""
}

// inCurrentRun: a Slurm job's pod belongs to the run its requeue count names (pods of
// an earlier run may still be terminating); every pod of a manifest workload does.
func inCurrentRun(pg *v1alpha1.PodGroup, p *corev1.Pod) bool {
	if pg.Spec.Slurm == nil {
		return true
	}
	i, err := v1alpha1.ParseNodeIndex(p.Labels[v1alpha1.NodeIndexLabel])
	return err == nil && p.Name == PodName(pg, i)
}

// endedBeforeDeletion: the pod ended, and not because it was deleted: its containers
// finished before its deletion was asked for (a pod the kubelet stops for its deletion
// ends after; one whose finish is not known, or falls in the same second, the API's
// precision, is taken as stopped by its deletion).
//
// A pod still listed with a deletion of grace 0 and no finalizer is its last state before
// removal, written by the delete that shortened an earlier, graceful one: the kubelet's
// (kwok's) final delete once it stopped the pod, or a forced one. A pod first deleted once
// it had ended gets grace 0 at once, and without a finalizer is removed with no such
// state. So its deletion was asked for before it ended, whatever the moved
// deletionTimestamp says: read by it, a gang pod stopped at second s and removed at s+1
// ended "before" its deletion, and the job read FAILED from its exit 143 until the pod
// was gone (the ledger kept that FAILED).
func endedBeforeDeletion(p *corev1.Pod) bool {
	if !Ended(p) || shortenedDeletion(p) {
		return false
	}
	asked := DeletionRequested(p)
	finished := LastFinish([]*corev1.Pod{p})
	return asked.IsZero() || !finished.IsZero() && finished.Before(asked.Truncate(time.Second))
}

// shortenedDeletion: the pod is being removed by a delete of grace 0 that no finalizer
// holds up, which is only ever written over an earlier deletion (see endedBeforeDeletion).
func shortenedDeletion(p *corev1.Pod) bool {
	g := p.DeletionGracePeriodSeconds
	return p.DeletionTimestamp != nil && g != nil && *g == 0 && len(p.Finalizers) == 0
}

// StoppedByDeletion reports whether pod p is being deleted and had not ended by itself
// before its deletion was asked for (it runs, or its deletion stopped it).
func StoppedByDeletion(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil && !endedBeforeDeletion(p)
}

// DeletionRequested is when the pod's deletion was asked for: its deletionTimestamp less
// the grace period it was given; zero when it is not being deleted.
func DeletionRequested(p *corev1.Pod) time.Time {
	if p.DeletionTimestamp == nil {
		return time.Time{}
	}
	at := p.DeletionTimestamp.Time
	if g := p.DeletionGracePeriodSeconds; g != nil {
		at = at.Add(-time.Duration(*g) * time.Second)
	}
	return at
}

// WithFirstDeletion is cur keeping the deletion request old showed when cur shows a later
// one. A kubelet (and the rig's kwok) removes a pod it stopped for its deletion with a
// second delete of grace 0, which moves deletionTimestamp to that moment, after the
// stop. endedBeforeDeletion already reads such a pod as stopped by its deletion; this
// keeps when the deletion was asked for, which ends a bare pod's job (CANCELLED, or the
// drain's PREEMPTED or NODE_FAIL). A reader that keeps a pod's last state beyond its
// removal (the recorder) passes the removed pod through this. cur is never changed
// (informer objects are shared).
func WithFirstDeletion(old, cur *corev1.Pod) *corev1.Pod {
	if old == nil || old.UID != cur.UID || old.DeletionTimestamp == nil || cur.DeletionTimestamp == nil ||
		!DeletionRequested(cur).After(DeletionRequested(old)) {
		return cur
	}
	c := cur.DeepCopy()
	c.DeletionTimestamp = old.DeletionTimestamp.DeepCopy()
	c.DeletionGracePeriodSeconds = nil
	if g := old.DeletionGracePeriodSeconds; g != nil {
		grace := *g
		c.DeletionGracePeriodSeconds = &grace
	}
	return c
}

// PodName names pod index of a Slurm job's current run: requeued runs get new names, so
// a new run never collides with the old one's pods still terminating.
func PodName(pg *v1alpha1.PodGroup, index int) string {
	if pg.Status.Requeues > 0 {
		return fmt.Sprintf("%s-r%d-%d", pg.Name, pg.Status.Requeues, index)
	}
	return fmt.Sprintf("%s-%d", pg.Name, index)
}

// startOf: the run's pods' earliest start, else the status's start time, else (a run
// that ended by losing its pods) the earliest start of any pod.
func startOf(f *facts) time.Time {
	if t := earliestStart(f.run); !t.IsZero() {
		return t
	}
	if t := f.pg.Status.StartTime; t != nil {
		return t.Time
	}
	return earliestStart(f.all)
}

// endOf: the status's end time, else when the last container finished, else now.
func endOf(f *facts, now time.Time) time.Time {
	if t := f.pg.Status.EndTime; t != nil {
		return t.Time
	}
	if t := LastFinish(f.all); !t.IsZero() {
		return t
	}
	return now
}

func nodesOf(run []*corev1.Pod) []string {
	var nodes []string
	for _, p := range run {
		if !slices.Contains(nodes, p.Spec.NodeName) {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// barePod: pg is a bare pod's group, owned by the Pod (whoever named it: admission or
// the pod grouper).
func barePod(pg *v1alpha1.PodGroup) bool {
	return pg.Spec.Slurm == nil && v1alpha1.OwningPod(pg) != nil
}

// Requeue is one requeue the objects show.
type Requeue struct {
	At     time.Time
	Reason string
}

// LastRequeue is the job's latest requeue, if it has one: for a Slurm job the one the
// lifecycle or scontrol requeue stamped (status.requeues with status.lastRequeueTime); for
// a manifest workload the scheduler's eviction of its pods (the Evicted condition), which
// its controller answers with new pods, unless nothing recreates them (a bare pod) or the
// eviction ended it (phase Preempted). The time comes from the object, so reading it again
// gives the same requeue, and a reader that missed the moment still sees it.
func LastRequeue(pg *v1alpha1.PodGroup) (Requeue, bool) {
	if pg.Spec.Slurm != nil {
		if t := pg.Status.LastRequeueTime; pg.Status.Requeues > 0 && t != nil {
			return Requeue{At: t.Time, Reason: "requeued"}, true
		}
		return Requeue{}, false
	}
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionEvicted)
	if c == nil || c.Status != metav1.ConditionTrue || pg.Status.Phase == v1alpha1.PodGroupPreempted || barePod(pg) {
		return Requeue{}, false
	}
	return Requeue{At: c.LastTransitionTime.Time, Reason: c.Reason + ": " + c.Message}, true
}
