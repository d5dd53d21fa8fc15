package jobstate

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// The three forms a job takes: a stored v1alpha1.PodGroup, a Slurm job read from its submit batch,
// and the group a bare pod implies; only the batch's copy is Batched, only the object
// Stored.
func TestStoredAndBatched(t *testing.T) {
	stored := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-7", ResourceVersion: "12", Labels: map[string]string{v1alpha1.JobIDLabel: "7"}},
		Spec: v1alpha1.PodGroupSpec{Slurm: &v1alpha1.SlurmJob{User: "alice"}}}
	raw, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "batch-1"}, Data: map[string]string{"7": string(raw)}}
	batched, err := BatchedPodGroup(cm, "7")
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", Labels: map[string]string{v1alpha1.JobIDLabel: "8"}}}
	implied := ImpliedPodGroup(pod)
	for _, tt := range []struct {
		name            string
		pg              *v1alpha1.PodGroup
		stored, batched bool
	}{{"stored", stored, true, false}, {"read from its batch", batched, false, true}, {"implied by a bare pod", implied, false, false}} {
		if IsStored(tt.pg) != tt.stored || IsBatched(tt.pg) != tt.batched {
			t.Errorf("%s: Stored %v Batched %v, want %v %v", tt.name, IsStored(tt.pg), IsBatched(tt.pg), tt.stored, tt.batched)
		}
	}
}
