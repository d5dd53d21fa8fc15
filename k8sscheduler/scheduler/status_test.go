package scheduler

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A PodGroup's status is written only when what the scheduler owns changes, and a
// waiting group is told why only after the delay.
func TestGroupStatusWritesOnlyChanges(t *testing.T) {
	s := &Scheduler{cfg: Config{PendingStatusDelay: time.Second}.withDefaults()}
	t0 := time.Unix(1000, 0)
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 2, Queue: "q"}}
	g := &groupEntry{key: "ns/pg", pg: pg}
	wait := bridge.Pending{Job: "ns/pg", Code: bridge.ReasonResources, Reason: "needs 2 nodes with 8 free GPUs"}
	steps := []struct {
		name   string
		bound  int32
		waits  bool
		at     time.Duration
		write  bool
		phase  v1alpha1.PodGroupPhase
		reason string
	}{
		{name: "just pending: no write yet", waits: true, at: 0},
		{name: "still within the delay", waits: true, at: 500 * time.Millisecond},
		{name: "past the delay: told why", waits: true, at: 1500 * time.Millisecond, write: true, phase: v1alpha1.PodGroupPending, reason: bridge.ReasonResources},
		{name: "same reason again: no write", waits: true, at: 2 * time.Second},
		{name: "binds in flight: no write", at: 3 * time.Second},
		{name: "all bound: running", bound: 2, at: 4 * time.Second, write: true, phase: v1alpha1.PodGroupRunning, reason: "Scheduled"},
		{name: "still running: no write", bound: 2, at: 5 * time.Second},
	}
	for _, st := range steps {
		g.bound = st.bound
		work := s.groupStatusLocked(g, wait, st.waits, t0.Add(st.at))
		if (work != nil) != st.write {
			t.Fatalf("%s: write = %v, want %v", st.name, work != nil, st.write)
		}
		if st.write && (g.status.written.phase != st.phase || g.status.written.reason != st.reason) {
			t.Errorf("%s: wrote %+v, want phase %s reason %s", st.name, g.status.written, st.phase, st.reason)
		}
	}
	g.status.evicted = &bridge.Eviction{Job: "ns/pg", Task: "pg-0", Kind: bridge.EvictReclaim, ForJob: "ns/other", Reason: "queue b reclaims its quota"}
	if s.groupStatusLocked(g, wait, false, t0.Add(6*time.Second)) == nil {
		t.Error("an eviction was not written to the PodGroup")
	}
	done := pg.DeepCopy()
	done.Status.Phase = v1alpha1.PodGroupSucceeded
	g.pg = done
	if s.groupStatusLocked(g, wait, true, t0.Add(time.Hour)) != nil {
		t.Error("a finished PodGroup's status was written")
	}
}

// A group placed in the cycle that first saw it costs no status write when it came as a
// manifest (its bindings say it runs), but a Slurm job is always marked Running, which
// squeue reads.
func TestGroupPlacedAtOnce(t *testing.T) {
	s := &Scheduler{cfg: Config{}.withDefaults()}
	slurm := v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q", Members: []v1alpha1.MemberSet{{Name: "node", Count: 1}}, Slurm: &v1alpha1.SlurmJob{User: "alice"}}
	tests := []struct {
		name    string
		spec    v1alpha1.PodGroupSpec
		status  v1alpha1.PodGroupStatus
		bound   int32
		created bool
		write   bool
	}{
		{name: "manifest group bound at once: no write", spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}, bound: 1},
		{name: "manifest gang bound at once: no write", spec: v1alpha1.PodGroupSpec{MinMember: 3, Queue: "q"}, bound: 3},
		{name: "manifest group that was told it waits: Running written", spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}, bound: 1,
			status: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPending, Conditions: []metav1.Condition{{Type: v1alpha1.PodGroupConditionScheduled,
				Status: metav1.ConditionFalse, Reason: bridge.ReasonResources, Message: "no node has a free GPU"}}}, write: true},
		{name: "Slurm job's pods created: Running written", spec: slurm, created: true, write: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"}, Spec: tt.spec, Status: tt.status}
			g := &groupEntry{key: "ns/pg", pg: pg, bound: tt.bound, created: tt.created}
			work := s.groupStatusLocked(g, bridge.Pending{}, false, time.Unix(1000, 0))
			if (work != nil) != tt.write {
				t.Fatalf("write = %v, want %v", work != nil, tt.write)
			}
			if tt.write && g.status.written.phase != v1alpha1.PodGroupRunning {
				t.Errorf("wrote phase %q, want Running", g.status.written.phase)
			}
		})
	}
}
