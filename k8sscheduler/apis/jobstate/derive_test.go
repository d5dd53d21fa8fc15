package jobstate

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

var (
	t0  = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	now = t0.Add(time.Hour)
)

// group is a PodGroup of minMember 2: a Slurm job's (slurm) or a Job's.
func group(phase v1alpha1.PodGroupPhase, slurm bool) *v1alpha1.PodGroup {
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "job-7",
		Labels: map[string]string{v1alpha1.JobIDLabel: "7"}}}
	pg.Spec.MinMember = 2
	pg.Status.Phase = phase
	if slurm {
		pg.Spec.Slurm = &v1alpha1.SlurmJob{}
	} else {
		pg.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "job-uid"}}
	}
	return pg
}

type podOpt func(*corev1.Pod)

// pod is the Slurm-named pod index i of pg's current run on node, in phase.
func pod(pg *v1alpha1.PodGroup, i int, node string, phase corev1.PodPhase, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: PodName(pg, i), Namespace: pg.Namespace,
		Labels: map[string]string{v1alpha1.NodeIndexLabel: string(rune('0' + i))}}}
	p.Spec.NodeName = node
	p.Status.Phase = phase
	if node != "" {
		p.Status.StartTime = &metav1.Time{Time: t0.Add(time.Duration(i) * time.Second)}
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func terminated(code int32, reason string) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: JobContainer, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, FinishedAt: metav1.NewTime(t0.Add(10 * time.Minute))}}}}
	}
}

func disrupted(reason string) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason})
	}
}

func deleting(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0.Add(time.Minute)} }

// finishedEarly: the pod's containers finished before its deletion.
func finishedEarly(p *corev1.Pod) {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: JobContainer, State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t0.Add(30 * time.Second))}}}}
}

// tracked: the Job controller has not yet counted the pod's end.
func tracked(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, jobTrackingFinalizer) }

// pressureKilled: the kubelet evicted the pod for node pressure.
func pressureKilled(p *corev1.Pod) {
	p.Status.Reason = PressureEvictedReason
	disrupted("TerminationByKubelet")(p)
}

// faulty: the remediation controller drains the pod off a faulty node.
func faulty(p *corev1.Pod) {
	p.Annotations = map[string]string{v1alpha1.NodeFaultAnnotation: "XID 79"}
	disrupted("EvictionByEvictionAPI")(p)
}

// named renames a pod (a Job's replacement pod has a name of its own).
func named(name string, p *corev1.Pod) *corev1.Pod {
	p.Name = name
	return p
}

func with(pg *v1alpha1.PodGroup, f func(*v1alpha1.PodGroupStatus)) *v1alpha1.PodGroup {
	f(&pg.Status)
	return pg
}

func TestRuleTable(t *testing.T) {
	slurmFailed := func(reason string, code *int32) *v1alpha1.PodGroup {
		return with(group(v1alpha1.PodGroupFailed, true), func(s *v1alpha1.PodGroupStatus) { s.EndReason, s.ExitCode = reason, code })
	}
	one := int32(1)
	manifest := group("", false)
	slurm := group(v1alpha1.PodGroupRunning, true)
	requeued := with(group(v1alpha1.PodGroupPending, true), func(s *v1alpha1.PodGroupStatus) { s.Requeues = 1 })
	bare := group("", false)
	bare.Spec.MinMember = 1
	bare.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: types.UID("p")}}
	bare.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupConditionEvicted, Status: metav1.ConditionTrue,
		Reason: "Preempt", LastTransitionTime: metav1.NewTime(t0.Add(5 * time.Minute))}}
	bareOnly := bare.DeepCopy()
	bareOnly.Status.Conditions = nil
	three := group("", false)
	three.Spec.MinMember = 3
	deleted := group("", false)
	deleted.DeletionTimestamp = &metav1.Time{Time: t0.Add(time.Minute)}
	tests := []ruleRow{
		{"succeeded", group(v1alpha1.PodGroupSucceeded, true), nil, Completed, "None", "phase Succeeded"},
		{"failed with exit code", slurmFailed("Error", &one), nil, Failed, "NonZeroExitCode", "phase Failed"},
		{"failed OOM-killed", slurmFailed("OOMKilled", &one), nil, OutOfMemory, "OutOfMemory", "phase Failed"},
		{"failed at the deadline", slurmFailed("DeadlineExceeded", &one), nil, Timeout, "TimeLimit", "phase Failed"},
		{"failed with its node", slurmFailed(NodeFailReason, nil), nil, NodeFail, "NodeDown", "phase Failed"},
		{"failed with its node, no end reason", slurmFailed("", nil), nil, NodeFail, "NodeDown", "phase Failed"},
		{"cancelled", group(v1alpha1.PodGroupCancelled, true), nil, Cancelled, "None", "phase Cancelled"},
		{"timed out", group(v1alpha1.PodGroupTimedOut, true), nil, Timeout, "TimeLimit", "phase TimedOut"},
		{"preempted", group(v1alpha1.PodGroupPreempted, false), nil, Preempted, "None", "phase Preempted"},
		{"bare pod evicted", bare, nil, Preempted, "None", "bare pod evicted"},
		{"every pod succeeded", manifest, []*corev1.Pod{pod(manifest, 0, "a", corev1.PodSucceeded), pod(manifest, 1, "b", corev1.PodSucceeded)},
			Completed, "None", "every pod of the run ended"},
		{"every pod ended, one failed", manifest, []*corev1.Pod{pod(manifest, 0, "a", corev1.PodSucceeded), pod(manifest, 1, "b", corev1.PodFailed, terminated(3, "Error"))},
			Failed, "NonZeroExitCode", "every pod of the run ended"},
		{"every pod ended, one OOM-killed", manifest, []*corev1.Pod{pod(manifest, 0, "a", corev1.PodSucceeded), pod(manifest, 1, "b", corev1.PodFailed, terminated(137, "OOMKilled"))},
			OutOfMemory, "OutOfMemory", "every pod of the run ended"},
		{"one pod OOM-killed, the other runs", manifest, []*corev1.Pod{pod(manifest, 0, "a", corev1.PodRunning), pod(manifest, 1, "b", corev1.PodFailed, terminated(137, "OOMKilled"))},
			Running, "None", "the run's pods are bound"},
		{"Slurm task OOM-killed, the other runs", slurm, []*corev1.Pod{pod(slurm, 0, "a", corev1.PodRunning), pod(slurm, 1, "b", corev1.PodFailed, terminated(137, "OOMKilled"))},
			Running, "None", "phase Running"},
		{"every pod ended, one lost with its node", manifest, []*corev1.Pod{pod(manifest, 0, "a", corev1.PodSucceeded), pod(manifest, 1, "b", corev1.PodFailed, disrupted("DeletionByTaintManager"))},
			NodeFail, "NodeDown", "every pod of the run ended"},
		{"gang failed, the rest of it removed", manifest, []*corev1.Pod{pod(manifest, 0, "a", corev1.PodFailed, terminated(3, "Error")), pod(manifest, 1, "b", corev1.PodFailed, terminated(143, "Error"), deleting)},
			Failed, "NonZeroExitCode", "every pod of the run ended"},
		{"gang bound", manifest, []*corev1.Pod{pod(manifest, 0, "a", corev1.PodRunning), pod(manifest, 1, "b", corev1.PodPending)}, Running, "None", "the run's pods are bound"},
		{"stale Pending phase, gang bound", with(group(v1alpha1.PodGroupPending, false), func(*v1alpha1.PodGroupStatus) {}),
			[]*corev1.Pod{pod(manifest, 0, "a", corev1.PodRunning), pod(manifest, 1, "b", corev1.PodRunning)}, Running, "None", "the run's pods are bound"},
		{"part of the gang bound", manifest, []*corev1.Pod{pod(manifest, 0, "a", corev1.PodRunning), pod(manifest, 1, "", corev1.PodPending)}, Pending, "None", "otherwise"},
		{"gang bound, one pod being deleted", manifest, []*corev1.Pod{pod(manifest, 0, "a", corev1.PodRunning), pod(manifest, 1, "b", corev1.PodRunning, deleting)}, Pending, "None", "otherwise"},
		{"no pods", manifest, nil, Pending, "None", "otherwise"},
		{"Slurm phase Running", slurm, nil, Running, "None", "phase Running"},
		{"Slurm requeued, the old run's pods still there", requeued, []*corev1.Pod{pod(group("", true), 0, "a", corev1.PodRunning), pod(group("", true), 1, "b", corev1.PodRunning)},
			Pending, "None", "otherwise"},
		{"Slurm requeued, the new run's pods bound", requeued, []*corev1.Pod{pod(requeued, 0, "c", corev1.PodRunning), pod(requeued, 1, "d", corev1.PodRunning)},
			Running, "None", "the run's pods are bound"},
		// A Job's failed pod retried within its backoffLimit: the Job completed.
		{"Job pod failed, retried, every member succeeded", manifest, []*corev1.Pod{pod(manifest, 0, "a", corev1.PodFailed, terminated(3, "Error")),
			pod(manifest, 1, "b", corev1.PodSucceeded), named("train-retry", pod(manifest, 2, "c", corev1.PodSucceeded))},
			Completed, "None", "every pod of the run ended"},
		// The Job controller has not counted the failure yet (it may retry it).
		{"Job pod failed, not yet counted by its Job", manifest, []*corev1.Pod{pod(manifest, 0, "a", corev1.PodFailed, terminated(3, "Error"), tracked),
			pod(manifest, 1, "b", corev1.PodSucceeded)}, Running, "None", "the run's pods are bound"},
		{"first pod of three failed, the others run", three, []*corev1.Pod{pod(three, 0, "a", corev1.PodFailed, terminated(3, "Error")),
			pod(three, 1, "b", corev1.PodRunning), pod(three, 2, "c", corev1.PodRunning)}, Running, "None", "the run's pods are bound"},
		{"every pod ended, one evicted for node pressure", manifest, []*corev1.Pod{pod(manifest, 0, "a", corev1.PodSucceeded),
			pod(manifest, 1, "b", corev1.PodFailed, terminated(137, ""), pressureKilled)}, Failed, "NonZeroExitCode", "every pod of the run ended"},
		{"Job deleted while its pods run", deleted, []*corev1.Pod{pod(deleted, 0, "a", corev1.PodRunning, deleting), pod(deleted, 1, "b", corev1.PodRunning, deleting)},
			Cancelled, "None", "workload deleted"},
		{"Job deleted after its pods succeeded", deleted, []*corev1.Pod{pod(deleted, 0, "a", corev1.PodSucceeded, finishedEarly, deleting),
			pod(deleted, 1, "b", corev1.PodSucceeded, finishedEarly, deleting)}, Completed, "None", "every pod of the run ended"},
		// Stopped for the deletion (their end is after it, or not known): cancelled.
		{"Job deleted, its pods stopped for it", deleted, []*corev1.Pod{pod(deleted, 0, "a", corev1.PodFailed, terminated(143, "Error"), deleting),
			pod(deleted, 1, "b", corev1.PodFailed, deleting)}, Cancelled, "None", "workload deleted"},
		// Stopped in the second its deletion was asked for (times are whole seconds).
		{"bare pod stopped in the second it was deleted", bareOnly, []*corev1.Pod{pod(bareOnly, 0, "a", corev1.PodFailed, deleting,
			func(p *corev1.Pod) {
				terminated(143, "Error")(p)
				p.Status.ContainerStatuses[0].State.Terminated.FinishedAt = *p.DeletionTimestamp
			})},
			Cancelled, "None", "workload deleted"},
		{"Job failed past its activeDeadlineSeconds, its pods stopped for it", with(group(v1alpha1.PodGroupFailed, false), func(s *v1alpha1.PodGroupStatus) { s.EndReason = "DeadlineExceeded" }),
			[]*corev1.Pod{pod(manifest, 0, "a", corev1.PodRunning, deleting), pod(manifest, 1, "b", corev1.PodFailed, terminated(143, "Error"), deleting)}, Timeout, "TimeLimit", "phase Failed"},
		{"bare pod deleted while it runs", bareOnly, []*corev1.Pod{pod(bareOnly, 0, "a", corev1.PodRunning, deleting)}, Cancelled, "None", "workload deleted"},
		{"bare pod drained off a faulty node", bareOnly, []*corev1.Pod{pod(bareOnly, 0, "a", corev1.PodRunning, deleting, faulty)}, NodeFail, "NodeDown", "workload deleted"},
		{"bare pod deleted while pending", bareOnly, []*corev1.Pod{pod(bareOnly, 0, "", corev1.PodPending, deleting)}, Cancelled, "None", "workload deleted"},
	}
	// Both orders: the first failed pod by name must not decide.
	tests = append(tests, drainedGang("train-a", "train-b")...)
	tests = append(tests, drainedGang("train-b", "train-a")...)
	covered := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Derive(tt.pg, tt.pods, now)
			covered[v.Rule] = true
			if v.State != tt.state || v.Reason != tt.reason || v.Rule != tt.rule {
				t.Errorf("got %s (%s) by %q, want %s (%s) by %q", v.State, v.Reason, v.Rule, tt.state, tt.reason, tt.rule)
			}
			if v.State == Completed && v.ExitCode != 0 {
				t.Errorf("completed with exit code %d", v.ExitCode)
			}
			if v.State == Pending && (!v.Start.IsZero() || v.Nodes != nil) {
				t.Errorf("pending job started %v on %v", v.Start, v.Nodes)
			}
			if v.State.Final() && (v.End.IsZero() || v.Start.After(v.End)) {
				t.Errorf("ended job: start %v end %v", v.Start, v.End)
			}
		})
	}
	for _, r := range rules {
		if !covered[r.name] {
			t.Errorf("rule %q is not covered", r.name)
		}
	}
}

type ruleRow struct {
	name   string
	pg     *v1alpha1.PodGroup
	pods   []*corev1.Pod
	state  State
	reason string
	rule   string
}

// evicting: the pod's deletion was asked for at t0+1m with the default grace period.
func evicting(p *corev1.Pod) {
	grace := int64(30)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &metav1.Time{Time: t0.Add(time.Minute + 30*time.Second)}, &grace
}

// stopped: its kubelet stopped it for its deletion (SIGTERM, exit 143) in the second the
// deletion was asked for.
func stopped(p *corev1.Pod) {
	p.Status.Phase = corev1.PodFailed
	terminated(143, "Error")(p)
	p.Status.ContainerStatuses[0].State.Terminated.FinishedAt = metav1.NewTime(t0.Add(time.Minute))
}

// removing: the kubelet's final delete (grace 0) a second after the stop, no finalizer
// left: the pod's last state before it goes, whose deletionTimestamp is after its stop.
func removing(p *corev1.Pod) {
	zero := int64(0)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &metav1.Time{Time: t0.Add(time.Minute + time.Second)}, &zero
	p.Finalizers = nil
}

// drainedGang is every state a gang Job of two pods (backoffLimit 0) on a node
// quarantined for a fault goes through: the drain marks pod a with the fault and evicts
// it; the Job controller fails the Job at a's failure and deletes b (which the drain may
// not reach, so b carries no mark); each pod is stopped (exit 143) and removed by its
// kubelet's final delete. No state may read as a final state other than NODE_FAIL: the
// ledger never changes a run it holds as ended (a FAILED read from the stopped pods
// while the Job's end was not yet written on its PodGroup stayed FAILED).
func drainedGang(a, b string) []ruleRow {
	pg := group("", false)
	ended := with(group(v1alpha1.PodGroupFailed, false), func(s *v1alpha1.PodGroupStatus) { s.EndReason = NodeFailReason })
	gang := func(aOpts []podOpt, bOpts ...podOpt) []*corev1.Pod {
		pods := []*corev1.Pod{named(a, pod(pg, 0, "h100-3", corev1.PodRunning, append([]podOpt{tracked, faulty}, aOpts...)...))}
		if bOpts != nil {
			pods = append(pods, named(b, pod(pg, 1, "h100-3", corev1.PodRunning, append([]podOpt{tracked}, bOpts...)...)))
		}
		return pods
	}
	running := func(*corev1.Pod) {}
	ownFailure := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed; terminated(1, "Error")(p); p.Finalizers = nil }
	row := func(name string, pg *v1alpha1.PodGroup, pods []*corev1.Pod, st State, rule string) ruleRow {
		return ruleRow{fmt.Sprintf("drained gang %s/%s: %s", a, b, name), pg, pods, st, reasons[st], rule}
	}
	onlyB := []*corev1.Pod{named(b, pod(pg, 1, "h100-3", corev1.PodFailed, stopped, evicting, removing))}
	return []ruleRow{
		row("a evicted, b runs", pg, gang([]podOpt{evicting}, running), Pending, "otherwise"),
		row("a stopped, b runs", pg, gang([]podOpt{evicting, stopped}, running), Pending, "otherwise"),
		row("a counted by its Job, b deleted by it", pg, gang([]podOpt{evicting, stopped, func(p *corev1.Pod) { p.Finalizers = nil }}, evicting), Pending, "otherwise"),
		row("a removed by its final delete, b runs", pg, gang([]podOpt{evicting, stopped, removing}, running), Pending, "otherwise"),
		row("a removed, b deleted by its Job", pg, gang([]podOpt{evicting, stopped, removing}, evicting), Pending, "otherwise"),
		row("a removed, b stopped", pg, gang([]podOpt{evicting, stopped, removing}, evicting, stopped), Pending, "otherwise"),
		row("both removed by their final deletes", pg, gang([]podOpt{evicting, stopped, removing}, evicting, stopped, removing), Pending, "otherwise"),
		row("a gone, b stopped and removed", pg, onlyB, Pending, "otherwise"),
		// b's own failure (its peer went away) ends the run; a's drain says why.
		row("a evicted, b failed by itself", pg, gang([]podOpt{evicting, stopped}, ownFailure), NodeFail, "every pod of the run ended"),
		row("a removed, b failed by itself", pg, gang([]podOpt{evicting, stopped, removing}, ownFailure), NodeFail, "every pod of the run ended"),
		// The lifecycle wrote the Job's end (jobend.go): every later state reads it.
		row("Job's end written, b stopped", ended, gang([]podOpt{evicting, stopped, removing}, evicting, stopped), NodeFail, "phase Failed"),
		row("Job's end written, a gone", ended, onlyB, NodeFail, "phase Failed"),
	}
}

func TestDeriveTimesAndExit(t *testing.T) {
	pg := group("", false)
	pods := []*corev1.Pod{pod(pg, 1, "h100-1", corev1.PodFailed, terminated(137, "OOMKilled")), pod(pg, 0, "h100-0", corev1.PodSucceeded, terminated(0, "Completed"))}
	v := Derive(pg, pods, now)
	if v.State != OutOfMemory || v.ExitCode != 137 {
		t.Fatalf("got %s exit %d, want OUT_OF_MEMORY exit 137", v.State, v.ExitCode)
	}
	if !v.Start.Equal(t0) || !v.End.Equal(t0.Add(10*time.Minute)) || !slices.Equal(v.Nodes, []string{"h100-0", "h100-1"}) {
		t.Errorf("ran %v..%v on %v, want %v..%v on h100-0, h100-1", v.Start, v.End, v.Nodes, t0, t0.Add(10*time.Minute))
	}
	// The status's exit code and end time win over the pods'.
	code := int32(2)
	end := metav1.NewTime(t0.Add(20 * time.Minute))
	pg.Status.Phase, pg.Status.ExitCode, pg.Status.EndTime = v1alpha1.PodGroupFailed, &code, &end
	if v := Derive(pg, pods, now); v.ExitCode != 2 || !v.End.Equal(end.Time) {
		t.Errorf("got exit %d end %v, want the status's 2 and %v", v.ExitCode, v.End, end.Time)
	}
	// Cancelled while pending: it ended without a start.
	pending := with(group(v1alpha1.PodGroupCancelled, true), func(s *v1alpha1.PodGroupStatus) { s.EndTime = &end })
	if v := Derive(pending, nil, now); !v.Start.IsZero() || !v.End.Equal(end.Time) {
		t.Errorf("cancelled while pending: %v..%v, want no start, end %v", v.Start, v.End, end.Time)
	}
}

func TestLastRequeue(t *testing.T) {
	at := metav1.NewTime(t0.Add(3 * time.Minute))
	evicted := []metav1.Condition{{Type: v1alpha1.PodGroupConditionEvicted, Status: metav1.ConditionTrue, Reason: "Reclaim", Message: "pod x", LastTransitionTime: at}}
	tests := []struct {
		name string
		pg   *v1alpha1.PodGroup
		want bool
	}{
		{"Slurm job requeued", with(group(v1alpha1.PodGroupRunning, true), func(s *v1alpha1.PodGroupStatus) { s.Requeues, s.LastRequeueTime = 2, &at }), true},
		{"Slurm job never requeued", group(v1alpha1.PodGroupRunning, true), false},
		// A Slurm job's requeue is the lifecycle's, not the scheduler's eviction.
		{"Slurm job evicted", with(group(v1alpha1.PodGroupRunning, true), func(s *v1alpha1.PodGroupStatus) { s.Conditions = evicted }), false},
		{"manifest evicted", with(group("", false), func(s *v1alpha1.PodGroupStatus) { s.Conditions = evicted }), true},
		{"manifest preempted for good", with(group(v1alpha1.PodGroupPreempted, false), func(s *v1alpha1.PodGroupStatus) { s.Conditions = evicted }), false},
	}
	for _, tt := range tests {
		r, ok := LastRequeue(tt.pg)
		if ok != tt.want || ok && !r.At.Equal(at.Time) {
			t.Errorf("%s: requeue %v at %v, want %v at %v", tt.name, ok, r.At, tt.want, at.Time)
		}
	}
}

func TestDisruption(t *testing.T) {
	pg := group(v1alpha1.PodGroupRunning, true)
	drained := pod(pg, 0, "a", corev1.PodRunning, disrupted("EvictionByEvictionAPI"))
	drained.Annotations = map[string]string{v1alpha1.NodeFaultAnnotation: "XID 79"}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want State
	}{
		{"running", pod(pg, 0, "a", corev1.PodRunning), ""},
		{"evicted", pod(pg, 0, "a", corev1.PodRunning, disrupted("EvictionByEvictionAPI")), Preempted},
		{"drained off a fault", drained, NodeFail},
		{"taint manager", pod(pg, 0, "a", corev1.PodRunning, disrupted("DeletionByTaintManager")), NodeFail},
		{"node shutdown", pod(pg, 0, "a", corev1.PodFailed, disrupted("TerminationByKubelet")), NodeFail},
		// Node pressure killed the pod for what it used: its failure, not a disruption.
		{"node-pressure eviction", pod(pg, 0, "a", corev1.PodFailed, pressureKilled), ""},
	}
	for _, tt := range tests {
		if got := Disruption(tt.pod); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestFlags(t *testing.T) {
	requeued := with(group(v1alpha1.PodGroupPending, true), func(s *v1alpha1.PodGroupStatus) { s.Requeues = 1 })
	cancelled := group(v1alpha1.PodGroupCancelled, true)
	failed := with(group(v1alpha1.PodGroupFailed, true), func(s *v1alpha1.PodGroupStatus) { s.EndReason = "Error" })
	deletedJob := group("", false)
	deletedJob.DeletionTimestamp = &metav1.Time{Time: t0.Add(time.Minute)}
	tests := []struct {
		name                 string
		pg                   *v1alpha1.PodGroup
		pods                 []*corev1.Pod
		state                State
		requeued, completing bool
	}{
		{"requeued, pending", requeued, nil, Pending, true, false},
		{"cancelled, its pods terminating", cancelled, []*corev1.Pod{pod(cancelled, 0, "a", corev1.PodRunning, deleting), pod(cancelled, 1, "b", corev1.PodRunning, deleting)},
			Cancelled, false, true},
		{"cancelled, its pods gone", cancelled, nil, Cancelled, false, false},
		{"failed, the other task still running", failed, []*corev1.Pod{pod(failed, 0, "a", corev1.PodFailed, terminated(2, "Error")), pod(failed, 1, "b", corev1.PodRunning)},
			Failed, false, true},
		{"failed, every task ended", failed, []*corev1.Pod{pod(failed, 0, "a", corev1.PodFailed, terminated(2, "Error")), pod(failed, 1, "b", corev1.PodFailed, terminated(143, "Error"))},
			Failed, false, false},
		{"Job deleted, its pods terminating", deletedJob, []*corev1.Pod{pod(deletedJob, 0, "a", corev1.PodRunning, deleting), pod(deletedJob, 1, "b", corev1.PodSucceeded, deleting)},
			Cancelled, false, true},
		{"running: never completing", group(v1alpha1.PodGroupRunning, true), []*corev1.Pod{pod(cancelled, 0, "a", corev1.PodRunning)}, Running, false, false},
	}
	covered := map[State]bool{}
	for _, tt := range tests {
		v := Derive(tt.pg, tt.pods, now)
		covered[Requeued] = covered[Requeued] || v.Requeued
		covered[Completing] = covered[Completing] || v.Completing
		if v.State != tt.state || v.Requeued != tt.requeued || v.Completing != tt.completing {
			t.Errorf("%s: %s requeued=%v completing=%v, want %s requeued=%v completing=%v", tt.name, v.State, v.Requeued, v.Completing, tt.state, tt.requeued, tt.completing)
		}
	}
	for _, fl := range flags {
		if !covered[fl.name] {
			t.Errorf("flag %s is not covered", fl.name)
		}
	}
}

func TestPendingReason(t *testing.T) {
	held := group(v1alpha1.PodGroupPending, true)
	held.Spec.Slurm.Hold = true
	later := group(v1alpha1.PodGroupPending, true)
	later.Annotations = map[string]string{v1alpha1.BeginTimeAnnotation: now.Add(time.Hour).Format(time.RFC3339)}
	begun := group(v1alpha1.PodGroupPending, true)
	begun.Annotations = map[string]string{v1alpha1.BeginTimeAnnotation: now.Add(-time.Hour).Format(time.RFC3339)}
	cond := func(typ, reason, msg string) *v1alpha1.PodGroup {
		return with(group(v1alpha1.PodGroupPending, true), func(s *v1alpha1.PodGroupStatus) {
			s.Conditions = []metav1.Condition{{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: msg}}
		})
	}
	tests := []struct {
		name string
		pg   *v1alpha1.PodGroup
		want string
	}{
		{"held", held, "JobHeldUser"},
		{"before its begin time", later, "BeginTime"},
		{"past its begin time", begun, "None"},
		{"dependency", cond(v1alpha1.PodGroupConditionEligible, "Dependency", "waiting for job 3"), "Dependency"},
		{"no room", cond(v1alpha1.PodGroupConditionScheduled, "Resources", "no node has 8 GPUs free"), "Resources"},
		{"factory refused: not eligible", cond(v1alpha1.PodGroupConditionScheduled, v1alpha1.ReasonPodCreateFailed, "Dependency: waiting for job 3"), "Dependency"},
		{"factory refused: quota", cond(v1alpha1.PodGroupConditionScheduled, v1alpha1.ReasonPodCreateFailed, "forbidden: quota"), v1alpha1.ReasonPodCreateFailed},
	}
	for _, tt := range tests {
		v := Derive(tt.pg, nil, now)
		if v.State != Pending || v.Reason != tt.want {
			t.Errorf("%s: %s (%s), want PENDING (%s)", tt.name, v.State, v.Reason, tt.want)
		}
	}
}

// A Slurm job the scheduler marked Running before its pods exist or its start time is
// written reads RUNNING since now, never since 0 (seen by TestBeginTimeOnRig as a start
// before the job's begin time).
func TestRunningWithNoStartYetStartsNow(t *testing.T) {
	v := Derive(group(v1alpha1.PodGroupRunning, true), nil, now)
	if v.State != Running || !v.Start.Equal(now) {
		t.Errorf("got %s since %v, want RUNNING since %v", v.State, v.Start, now)
	}
}
