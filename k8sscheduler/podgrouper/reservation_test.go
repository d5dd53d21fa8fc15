package podgrouper

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A derived group carries the reservation its pod or nearest owner names, so the
// scheduler reads it from the group as it does a Slurm job's.
func TestForPodCarriesReservation(t *testing.T) {
	annotated := job(t, "j", nil, nil, nil)
	annotated.SetAnnotations(map[string]string{v1alpha1.ReservationAnnotation: "from-annotation"})
	cases := []struct {
		name   string
		pod    *corev1.Pod
		owners []*unstructured.Unstructured
		want   string
	}{
		{"pod label", pod("p", map[string]string{v1alpha1.ReservationAnnotation: "hack"}), nil, "hack"},
		{"owner label", pod("p", nil), []*unstructured.Unstructured{job(t, "j", nil, nil, map[string]string{v1alpha1.ReservationAnnotation: "class"})}, "class"},
		{"owner annotation", pod("p", nil), []*unstructured.Unstructured{annotated}, "from-annotation"},
		{"pod wins over owner", pod("p", map[string]string{v1alpha1.ReservationAnnotation: "mine"}), []*unstructured.Unstructured{annotated}, "mine"},
		{"none", pod("p", nil), nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pg, err := ForPod(c.pod, c.owners, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := pg.Annotations[v1alpha1.ReservationAnnotation]; got != c.want {
				t.Errorf("reservation %q, want %q", got, c.want)
			}
		})
	}
}
