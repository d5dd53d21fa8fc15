package recorder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// The recorder writes a PodGroup's state and reason only where they differ from the read
// model's, and never to a group that is gone or has no object (a bare pod's implied
// group).
func TestStateChanges(t *testing.T) {
	stored := func(mutate func(*v1alpha1.PodGroup)) *v1alpha1.PodGroup {
		return slurmGroup("7", func(pg *v1alpha1.PodGroup) {
			pg.ResourceVersion = "12"
			mutate(pg)
		})
	}
	running := stored(func(pg *v1alpha1.PodGroup) { pg.Status.Phase = v1alpha1.PodGroupRunning })
	shown := stored(func(pg *v1alpha1.PodGroup) {
		pg.Status.Phase, pg.Status.State, pg.Status.Reason = v1alpha1.PodGroupRunning, "RUNNING", "None"
	})
	cancelled := stored(func(pg *v1alpha1.PodGroup) { pg.Status.Phase = v1alpha1.PodGroupCancelled })
	terminating := pod("job-7-0", "n1", 5, corev1.PodRunning, -1, 0, nil)
	terminating.DeletionTimestamp = mt(90)
	slurmRun(cancelled, []*corev1.Pod{terminating})
	implied := jobstate.ImpliedPodGroup(lonePod("n1", 5, corev1.PodRunning, -1, 0))
	tests := []struct {
		name          string
		w             groupWork
		state, reason string // "" for no write
	}{
		{"running, nothing written yet", groupWork{pg: running}, "RUNNING", "None"},
		{"running, already shown", groupWork{pg: shown}, "", ""},
		{"cancelled, its pod terminating", groupWork{pg: cancelled, pods: []*corev1.Pod{terminating}}, "COMPLETING", "None"},
		{"pending: why it waits", groupWork{pg: stored(func(pg *v1alpha1.PodGroup) { pg.Spec.Slurm.Hold = true })}, "PENDING", "JobHeldUser"},
		{"deleted", groupWork{pg: running, deleted: true}, "", ""},
		{"a bare pod without a PodGroup", groupWork{pg: implied}, "", ""},
	}
	for _, tt := range tests {
		got := stateChanges([]groupWork{tt.w}, at(100))
		switch {
		case tt.state == "" && len(got) != 0:
			t.Errorf("%s: writes %s (%s), want no write", tt.name, got[0].state, got[0].reason)
		case tt.state != "" && (len(got) != 1 || got[0].state != tt.state || got[0].reason != tt.reason):
			t.Errorf("%s: writes %+v, want %s (%s)", tt.name, got, tt.state, tt.reason)
		}
	}
}
