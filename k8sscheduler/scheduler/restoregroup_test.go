package scheduler

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Which deleted PodGroups are kept, charged and written again: a manifest group whose
// pods still hold resources, and no other.
func TestDeletedPodGroupKeptWhileItsPodsRun(t *testing.T) {
	submitted := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
	manifest := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "nlp", UID: "u1", ResourceVersion: "7",
		CreationTimestamp: metav1.NewTime(submitted), Labels: map[string]string{v1alpha1.JobIDLabel: "42"}}, Spec: v1alpha1.PodGroupSpec{Queue: "nlp", MinMember: 1}}
	slurm := manifest.DeepCopy()
	slurm.Spec.Slurm = &v1alpha1.SlurmJob{User: "alice"}
	bound := func() *podEntry { return &podEntry{name: "train-0", node: "h100-0"} }
	leaving := func() *podEntry { return &podEntry{name: "train-0", node: "h100-0", terminating: true} }
	unbound := func() *podEntry { return &podEntry{name: "train-0"} }
	tests := []struct {
		name string
		pg   *v1alpha1.PodGroup
		pod  *podEntry
		kept bool
	}{
		{"a Job's group, its pod running", manifest, bound(), true},
		{"a Job's group, its pod on its way out", manifest, leaving(), false},
		{"a Job's group, its pod not placed", manifest, unbound(), false},
		{"a Slurm job's group (it owns its pods)", slurm, bound(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache()
			g := c.group("nlp/train")
			g.pg = tt.pg
			g.putPod(tt.pod)
			c.deletePodGroup("nlp/train")
			if (g.lost != nil) != tt.kept {
				t.Fatalf("kept a copy: %v, want %v", g.lost != nil, tt.kept)
			}
			if !tt.kept {
				return
			}
			if pg := g.podGroup(); pg == nil || pg.Spec.Queue != "nlp" || pg.UID != "" || pg.ResourceVersion != "" || pg.Labels[v1alpha1.JobIDLabel] != "42" {
				t.Errorf("the group goes by %+v, want the deleted one's spec and labels without its identity", pg)
			}
			// Written again, it is still the job submitted then: its pods started after that,
			// and the ledger orders the job's states by time.
			if got := g.podGroup().SubmitTime(); !got.Equal(submitted) {
				t.Errorf("the copy's submit time is %v, want the deleted group's %v", got, submitted)
			}
			s := &Scheduler{cache: c}
			now := time.Now()
			if s.restoreLocked(g, now) == nil {
				t.Error("no write of the deleted group")
			}
			if s.restoreLocked(g, now.Add(time.Second)) != nil {
				t.Error("a second write while the first may be in flight")
			}
			g.pods.get("train-0").terminating = true
			if s.restoreLocked(g, now.Add(time.Minute)) != nil || g.lost != nil {
				t.Error("still kept once its pod is on its way out")
			}
		})
	}
}
