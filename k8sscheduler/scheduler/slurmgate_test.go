package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func slurmGroup(slurm v1alpha1.SlurmJob, phase v1alpha1.PodGroupPhase, conds ...metav1.Condition) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns", Generation: 2},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q", Partition: "h100", Slurm: &slurm,
			Members: []v1alpha1.MemberSet{{Name: "node", Count: 1, Resources: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")}}}},
		Status: v1alpha1.PodGroupStatus{Phase: phase, Conditions: conds}}
}

func eligible(status metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.PodGroupConditionEligible, Status: status, Reason: reason, Message: "judged " + reason, ObservedGeneration: gen}
}

// Held jobs and jobs whose dependency is not met stay pending with Slurm's reason; a
// started job is not held back by either.
func TestSlurmJobsHeldOrWaitingAreNotPlaced(t *testing.T) {
	tests := []struct {
		name       string
		pg         *v1alpha1.PodGroup
		boundPods  int
		wantCode   string // "" when the job goes into the snapshot
		wantReason string
	}{
		{name: "plain job is placed", pg: slurmGroup(v1alpha1.SlurmJob{User: "alice"}, "")},
		{name: "held job", pg: slurmGroup(v1alpha1.SlurmJob{Hold: true}, v1alpha1.PodGroupPending),
			wantCode: ReasonJobHeld, wantReason: "the job is held; release it with scontrol release"},
		{name: "held job with a met dependency is still held",
			pg:       slurmGroup(v1alpha1.SlurmJob{Hold: true, Dependency: "afterok:7"}, "", eligible(metav1.ConditionTrue, "DependencySatisfied", 2)),
			wantCode: ReasonJobHeld, wantReason: "the job is held; release it with scontrol release"},
		{name: "dependency not judged yet", pg: slurmGroup(v1alpha1.SlurmJob{Dependency: "afterok:7"}, ""),
			wantCode: ReasonDependency, wantReason: "waiting for the dependency afterok:7 to be judged"},
		{name: "dependency judged for an older generation",
			pg:       slurmGroup(v1alpha1.SlurmJob{Dependency: "afterok:7"}, "", eligible(metav1.ConditionTrue, "DependencySatisfied", 1)),
			wantCode: ReasonDependency, wantReason: "waiting for the dependency afterok:7 to be judged"},
		{name: "dependency waiting",
			pg:       slurmGroup(v1alpha1.SlurmJob{Dependency: "afterok:7"}, "", eligible(metav1.ConditionFalse, "Dependency", 2)),
			wantCode: ReasonDependency, wantReason: "judged Dependency"},
		{name: "dependency never satisfied keeps Slurm's reason",
			pg:       slurmGroup(v1alpha1.SlurmJob{Dependency: "afterok:7"}, "", eligible(metav1.ConditionFalse, "DependencyNeverSatisfied", 2)),
			wantCode: "DependencyNeverSatisfied", wantReason: "judged DependencyNeverSatisfied"},
		{name: "dependency met", pg: slurmGroup(v1alpha1.SlurmJob{Dependency: "afterok:7"}, "", eligible(metav1.ConditionTrue, "DependencySatisfied", 2))},
		{name: "running job is not held back", pg: slurmGroup(v1alpha1.SlurmJob{Hold: true}, v1alpha1.PodGroupRunning), boundPods: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache()
			c.slurmPods = true
			c.setPodGroup(tt.pg)
			for i := range tt.boundPods {
				p := testPod(string(rune('a'+i)), "1", map[string]string{v1alpha1.TaskGroupAnnotation: "node"}, "n1")
				c.setPod(podKey("ns", p.Name), convertPod(p, "sluice"))
			}
			snap, blocked := c.snapshot(metav1.Now().Time)
			if tt.wantCode == "" {
				if len(snap.Jobs) != 1 || len(blocked) != 0 {
					t.Fatalf("jobs %d, blocked %+v; want the job placed", len(snap.Jobs), blocked)
				}
				return
			}
			if len(snap.Jobs) != 0 {
				t.Fatalf("the job is offered to the core: %+v", snap.Jobs)
			}
			want := bridge.Pending{Job: "ns/pg", Code: tt.wantCode, Reason: tt.wantReason}
			if len(blocked) != 1 || blocked[0] != want {
				t.Fatalf("blocked = %+v, want %+v", blocked, want)
			}
		})
	}
}

// The lifecycle writes Eligible as a status-only update (same generation, same phase):
// the cache must still rebuild the job, or it would wait until something else changes.
func TestEligibleConditionWakesTheJob(t *testing.T) {
	c := newCache()
	c.slurmPods = true
	pg := slurmGroup(v1alpha1.SlurmJob{Dependency: "afterok:7"}, v1alpha1.PodGroupPending, eligible(metav1.ConditionFalse, "Dependency", 2))
	c.setPodGroup(pg)
	if snap, _ := c.snapshot(metav1.Now().Time); len(snap.Jobs) != 0 {
		t.Fatal("a job waiting on its dependency was offered to the core")
	}
	met := pg.DeepCopy()
	met.Status.Conditions = []metav1.Condition{eligible(metav1.ConditionTrue, "DependencySatisfied", 2)}
	c.setPodGroup(met)
	if snap, blocked := c.snapshot(metav1.Now().Time); len(snap.Jobs) != 1 {
		t.Fatalf("the met dependency did not release the job: blocked %+v", blocked)
	}
}

// A requeued Slurm job runs again: once it is Pending with a new requeue count and the old
// run's pods are gone, the core is asked to place all of it again. Its own Running write
// not yet seen (Pending, same requeue count) must not start a second copy.
func TestRequeuedSlurmJobIsPlacedAgain(t *testing.T) {
	type step struct {
		name      string
		phase     v1alpha1.PodGroupPhase
		requeues  int32
		pod       string // "bound", "terminating" or "" (gone)
		wantTasks int32  // tasks the core is asked to place anew; -1: job not in the snapshot
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "requeued by the lifecycle", steps: []step{
			{name: "running", phase: v1alpha1.PodGroupRunning, pod: "bound", wantTasks: 0},
			{name: "requeued, pod terminating", phase: v1alpha1.PodGroupPending, requeues: 1, pod: "terminating", wantTasks: -1},
			{name: "requeued, pod gone", phase: v1alpha1.PodGroupPending, requeues: 1, wantTasks: 1},
		}},
		{name: "pods gone before our Running write is seen", steps: []step{
			{name: "pod bound, phase not yet Running", phase: v1alpha1.PodGroupPending, pod: "bound", wantTasks: 0},
			{name: "pod finished, phase still Pending", phase: v1alpha1.PodGroupPending, wantTasks: -1},
		}},
		{name: "finished job requeued by scontrol", steps: []step{
			{name: "running", phase: v1alpha1.PodGroupRunning, pod: "bound", wantTasks: 0},
			{name: "completed", phase: v1alpha1.PodGroupSucceeded, wantTasks: -1},
			{name: "requeued", phase: v1alpha1.PodGroupPending, requeues: 1, wantTasks: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache()
			c.slurmPods = true
			s := &Scheduler{cache: c}
			pg := slurmGroup(v1alpha1.SlurmJob{User: "alice", Requeue: true}, v1alpha1.PodGroupPending)
			c.setPodGroup(pg)
			c.snapshot(metav1.Now().Time)
			c.mu.Lock()
			if work := s.bindsLocked("ns/pg", []bridge.Bind{{Job: "ns/pg", Group: "node", Task: "pg-0", Node: "n1"}}); len(work) != 1 {
				t.Fatalf("%d creates, want 1", len(work))
			}
			c.groups["ns/pg"].status.written = statusKey{phase: v1alpha1.PodGroupRunning}
			c.mu.Unlock()
			for _, st := range tt.steps {
				next := pg.DeepCopy()
				next.Status.Phase, next.Status.Requeues = st.phase, st.requeues
				c.setPodGroup(next)
				p := testPod("pg-0", "1", map[string]string{v1alpha1.TaskGroupAnnotation: "node"}, "n1")
				switch st.pod {
				case "bound":
					c.setPod("ns/pg-0", convertPod(p, "sluice"))
				case "terminating":
					p.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
					c.setPod("ns/pg-0", convertPod(p, "sluice"))
				default:
					c.setPod("ns/pg-0", nil)
				}
				snap, _ := c.snapshot(metav1.Now().Time)
				got := int32(-1)
				if len(snap.Jobs) == 1 {
					got = snap.Jobs[0].Groups[0].Count - int32(len(snap.Jobs[0].Running))
				}
				if got != st.wantTasks {
					t.Fatalf("%s: %d tasks offered, want %d", st.name, got, st.wantTasks)
				}
				if g := c.groups["ns/pg"]; st.wantTasks > 0 && st.pod == "" && g.status.written != (statusKey{}) {
					t.Errorf("%s: the first run's status %+v is still remembered, so the second Running would not be written", st.name, g.status.written)
				}
			}
		})
	}
}
