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
	return metav1.Condition{Type: ConditionEligible, Status: status, Reason: reason, Message: "judged " + reason, ObservedGeneration: gen}
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
				p := testPod(string(rune('a'+i)), "1", map[string]string{TaskGroupAnnotation: "node"}, "n1")
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
