package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A Slurm job's Running status is written as its pods are created; when the creates fail
// (the API server went away) or the leader dies before making them, the job is Running
// with no pods. A leader (a new one: nothing created by it) places such a job again; one
// whose pods ran, now finished or still running, it leaves alone.
func TestRunningSlurmJobWithoutPodsIsPlacedAgain(t *testing.T) {
	tests := []struct {
		name      string
		pod       corev1.PodPhase // "" for none; the pod pg-0 on n1 otherwise
		wantTasks int32           // tasks the core is asked to place; -1: not in the snapshot
	}{
		{name: "pods never created", wantTasks: 1},
		{name: "pod running", pod: corev1.PodRunning, wantTasks: 0},
		{name: "pod finished, lifecycle not yet caught up", pod: corev1.PodSucceeded, wantTasks: -1},
		{name: "pod failed, lifecycle not yet caught up", pod: corev1.PodFailed, wantTasks: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache()
			c.slurmPods = true
			s := &Scheduler{cache: c, cfg: Config{SchedulerName: "sluice"}}
			c.setPodGroup(slurmGroup(v1alpha1.SlurmJob{User: "alice"}, v1alpha1.PodGroupRunning))
			if tt.pod != "" {
				p := testPod("pg-0", "1", map[string]string{v1alpha1.TaskGroupAnnotation: "node"}, "n1")
				p.Status.Phase = tt.pod
				s.podHandlers().OnAdd(p, true) // as the informer's first list delivers it
			}
			snap, blocked := c.snapshot(metav1.Now().Time)
			got := int32(-1)
			if len(snap.Jobs) == 1 {
				got = snap.Jobs[0].Groups[0].Count - int32(len(snap.Jobs[0].Running))
			}
			if got != tt.wantTasks {
				t.Fatalf("%d tasks offered (blocked %+v), want %d", got, blocked, tt.wantTasks)
			}
		})
	}
}
