package jobstate

import (
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
	tests := []struct {
		name   string
		pg     *v1alpha1.PodGroup
		pods   []*corev1.Pod
		state  State
		reason string
		rule   string
	}{
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
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Derive(tt.pg, tt.pods, now)
			covered[v.Rule] = true
			if v.State != tt.state || v.Reason != tt.reason || v.Rule != tt.rule {
				t.Errorf("got %s (%s) by %q, want %s (%s) by %q", v.State, v.Reason, v.Rule, tt.state, tt.reason, tt.rule)
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
	}
	for _, tt := range tests {
		if got := Disruption(tt.pod); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
