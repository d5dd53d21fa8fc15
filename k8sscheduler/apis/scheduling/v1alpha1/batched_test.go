package v1alpha1

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The three forms a job takes: a stored PodGroup, a Slurm job read from its submit batch,
// and the group a bare pod implies; only the batch's copy is Batched, only the object
// Stored.
func TestStoredAndBatched(t *testing.T) {
	stored := &PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-7", ResourceVersion: "12", Labels: map[string]string{JobIDLabel: "7"}},
		Spec: PodGroupSpec{Slurm: &SlurmJob{User: "alice"}}}
	raw, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "batch-1"}, Data: map[string]string{"7": string(raw)}}
	batched, err := BatchedPodGroup(cm, "7")
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", Labels: map[string]string{JobIDLabel: "8"}}}
	implied := ImpliedPodGroup(pod)
	for _, tt := range []struct {
		name            string
		pg              *PodGroup
		stored, batched bool
	}{{"stored", stored, true, false}, {"read from its batch", batched, false, true}, {"implied by a bare pod", implied, false, false}} {
		if tt.pg.Stored() != tt.stored || tt.pg.Batched() != tt.batched {
			t.Errorf("%s: Stored %v Batched %v, want %v %v", tt.name, tt.pg.Stored(), tt.pg.Batched(), tt.stored, tt.batched)
		}
	}
}
