package kube

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func TestManifestJobStateFromPods(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	pod := func(node string, phase corev1.PodPhase) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		if node != "" {
			p.Status.StartTime = &start
		}
		return p
	}
	group := func(phase v1alpha1.PodGroupPhase, slurm bool) *v1alpha1.PodGroup {
		pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train",
			Labels: map[string]string{v1alpha1.JobIDLabel: "4242"}}}
		pg.Spec.MinMember = 2
		pg.Status.Phase = phase
		if slurm {
			pg.Spec.Slurm = &v1alpha1.SlurmJob{}
		}
		return pg
	}
	tests := []struct {
		name  string
		pg    *v1alpha1.PodGroup
		pods  []corev1.Pod
		state string
		nodes string
	}{
		{"gang bound: running", group("", false), []corev1.Pod{pod("h100-1", corev1.PodRunning), pod("h100-0", corev1.PodPending)}, "RUNNING", "h100-[0-1]"},
		{"part of the gang bound: pending", group("", false), []corev1.Pod{pod("h100-1", corev1.PodRunning), pod("", corev1.PodPending)}, "PENDING", ""},
		{"every pod succeeded", group("", false), []corev1.Pod{pod("a", corev1.PodSucceeded), pod("b", corev1.PodSucceeded)}, "COMPLETED", "a,b"},
		{"one pod failed", group("", false), []corev1.Pod{pod("a", corev1.PodSucceeded), pod("b", corev1.PodFailed)}, "FAILED", "a,b"},
		{"no pods yet", group("", false), nil, "PENDING", ""},
		{"the scheduler's phase wins", group(v1alpha1.PodGroupPending, false), []corev1.Pod{pod("a", corev1.PodRunning), pod("b", corev1.PodRunning)}, "PENDING", ""},
		{"Slurm jobs keep their phase", group("", true), []corev1.Pod{pod("a", corev1.PodRunning), pod("b", corev1.PodRunning)}, "PENDING", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := JobFromPodGroup(tt.pg)
			if err != nil {
				t.Fatal(err)
			}
			stateFromPods(&j, tt.pg, tt.pods)
			if j.State[0] != tt.state || j.NodeList != tt.nodes {
				t.Errorf("state %v on %q, want %s on %q", j.State, j.NodeList, tt.state, tt.nodes)
			}
			if tt.state == "RUNNING" && (!j.StartTime.Equal(start.Time) || !slices.Equal(j.NodeNames, []string{"h100-0", "h100-1"})) {
				t.Errorf("running job started %v on %v", j.StartTime, j.NodeNames)
			}
		})
	}
}
