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
