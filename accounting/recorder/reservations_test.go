package recorder

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// The recorder writes a reservation's window with its nodes' capacity; a DAILY one that
// moved on gets a record for its next window beside the first; one deleted while open
// is cut at its deletion; one deleted before it opened is forgotten. A pod naming a
// reservation records it on its job.
func TestReservationsAreRecordedByWindow(t *testing.T) {
	clock := at(0)
	r, db := newOfflineRecorder(t, func() time.Time { return clock })
	ctx := context.Background()
	for _, name := range []string{"h100-0", "h100-1"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at(0))}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), v1alpha1.GPUResource: resource.MustParse("8")}}}
		r.st.setNode(n)
	}
	daily := &v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "class"}, Spec: v1alpha1.ReservationSpec{
		StartTime: metav1.NewTime(at(100)), Duration: &metav1.Duration{Duration: time.Hour}, Nodes: []string{"h100-1", "h100-0"},
		Accounts: []string{"nlp"}, Flags: []v1alpha1.ReservationFlag{v1alpha1.ReservationDaily}}}
	later := &v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "later"}, Spec: v1alpha1.ReservationSpec{
		StartTime: metav1.NewTime(at(90000)), Duration: &metav1.Duration{Duration: time.Hour}, Nodes: []string{"h100-0"}, Users: []string{"bob"}}}
	r.st.setReservation(daily)
	r.st.setReservation(later)
	if err := r.flushLogged(ctx); err != nil {
		t.Fatal(err)
	}
	first := accounting.Reservation{Name: "class", Start: at(100), End: at(3700), Nodes: "h100-0,h100-1", Flags: []string{"DAILY"},
		Accounts: []string{"nlp"}, TRES: accounting.TRES{CPUs: 128, GPUs: 16, Nodes: 2}}
	got, err := db.Reservations(ctx, time.Time{}, time.Time{})
	if err != nil || len(got) != 2 || !reflect.DeepEqual(got[0], first) || got[1].Name != "later" {
		t.Fatalf("recorded %+v, %v; want class's first window %+v and later's", got, err, first)
	}
	// The next day's window, as the controller moves it on; then deleted an hour into it.
	moved := daily.DeepCopy()
	s, e := metav1.NewTime(at(86500)), metav1.NewTime(at(90100))
	moved.Status.StartTime, moved.Status.EndTime = &s, &e
	r.st.setReservation(moved)
	if err := r.flushLogged(ctx); err != nil {
		t.Fatal(err)
	}
	clock = at(88000)
	r.st.deleteReservation(moved)
	r.st.deleteReservation(later)
	if err := r.flushLogged(ctx); err != nil {
		t.Fatal(err)
	}
	got, err = db.Reservations(ctx, time.Time{}, time.Time{})
	if err != nil || len(got) != 2 || !reflect.DeepEqual(got[0], first) || !got[1].Start.Equal(at(86500)) || !got[1].End.Equal(at(88000)) {
		t.Fatalf("after the second window was cut and later forgotten: %+v, %v", got, err)
	}

	// The job's reservation: its PodGroup's annotation (Slurm jobs), else its pods' label.
	slurm := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-7", Namespace: "slurm-nlp",
		Annotations: map[string]string{v1alpha1.ReservationAnnotation: "class"}}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "nlp"}}
	manifest := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "team"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "nlp"}}
	labelled := pod("train-0", "h100-0", 5, corev1.PodRunning, -1, 0, nil)
	labelled.Labels = map[string]string{v1alpha1.ReservationAnnotation: "later"}
	for _, c := range []struct {
		pg   *v1alpha1.PodGroup
		pods []*corev1.Pod
		want string
	}{
		{slurm, []*corev1.Pod{pod("job-7-0", "h100-0", 5, corev1.PodRunning, -1, 0, nil)}, "class"},
		{manifest, []*corev1.Pod{labelled}, "later"},
		{manifest, []*corev1.Pod{pod("train-1", "h100-0", 5, corev1.PodRunning, -1, 0, nil)}, ""},
	} {
		if j, _ := derive(c.pg, c.pods, nil, at(10)); j.Reservation != c.want {
			t.Errorf("%s: reservation %q, want %q", c.pg.Name, j.Reservation, c.want)
		}
	}
}
