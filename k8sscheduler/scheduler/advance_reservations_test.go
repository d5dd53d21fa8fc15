package scheduler

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

var resvT0 = time.Date(2030, 3, 4, 9, 0, 0, 0, time.UTC)

func testReservation(name string, mutate func(*v1alpha1.Reservation)) *v1alpha1.Reservation {
	r := &v1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ReservationSpec{StartTime: metav1.NewTime(resvT0), Duration: &metav1.Duration{Duration: time.Hour},
			Nodes: []string{"n1"}, Namespaces: []string{"nlp"}, Accounts: []string{"nlp-q"}, Users: []string{"alice"}},
	}
	if mutate != nil {
		mutate(r)
	}
	return r
}

func TestConvertReservation(t *testing.T) {
	tests := []struct {
		name  string
		r     *v1alpha1.Reservation
		now   time.Time
		want  bridge.AdvanceReservation
		check func(t *testing.T, got bridge.AdvanceReservation)
	}{
		{name: "spec nodes until resolved", r: testReservation("a", nil), now: resvT0.Add(-time.Minute),
			want: bridge.AdvanceReservation{Name: "a", Start: resvT0, End: resvT0.Add(time.Hour), Nodes: []string{"n1"},
				Users: []string{"alice"}, Queues: []string{"nlp-q"}, Scopes: []string{"nlp"}}},
		{name: "resolved nodes and flags", r: testReservation("b", func(r *v1alpha1.Reservation) {
			r.Spec.Nodes, r.Spec.NodeCount, r.Spec.Partition = nil, ptr[int32](2), "h100"
			r.Status.Nodes = []string{"n2", "n3"}
			r.Spec.Flags = []v1alpha1.ReservationFlag{v1alpha1.ReservationMaint, v1alpha1.ReservationFlex, v1alpha1.ReservationMagnetic}
		}), now: resvT0,
			want: bridge.AdvanceReservation{Name: "b", Start: resvT0, End: resvT0.Add(time.Hour), Nodes: []string{"n2", "n3"},
				Users: []string{"alice"}, Queues: []string{"nlp-q"}, Scopes: []string{"nlp"}, Maint: true, Flex: true, Magnetic: true}},
		{name: "daily moves on before the controller does", r: testReservation("c", func(r *v1alpha1.Reservation) {
			r.Spec.Flags = []v1alpha1.ReservationFlag{v1alpha1.ReservationDaily}
		}), now: resvT0.Add(90 * time.Minute),
			want: bridge.AdvanceReservation{Name: "c", Start: resvT0.Add(24 * time.Hour), End: resvT0.Add(25 * time.Hour), Nodes: []string{"n1"},
				Users: []string{"alice"}, Queues: []string{"nlp-q"}, Scopes: []string{"nlp"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := convertReservation(tt.r, tt.now)
			w := tt.want
			if got.Name != w.Name || !got.Start.Equal(w.Start) || !got.End.Equal(w.End) || !slices.Equal(got.Nodes, w.Nodes) ||
				!slices.Equal(got.Users, w.Users) || !slices.Equal(got.Queues, w.Queues) || !slices.Equal(got.Scopes, w.Scopes) ||
				got.Maint != w.Maint || got.Flex != w.Flex || got.Magnetic != w.Magnetic {
				t.Errorf("got %+v\nwant %+v", got, w)
			}
		})
	}
}

// The snapshot carries every Reservation in name order, and the loop is told when the
// next window opens or closes.
func TestSnapshotCarriesReservations(t *testing.T) {
	c := newCache()
	c.setAdvanceReservation("b", testReservation("b", nil))
	c.setAdvanceReservation("a", testReservation("a", func(r *v1alpha1.Reservation) {
		r.Spec.StartTime = metav1.NewTime(resvT0.Add(30 * time.Minute))
	}))
	if len(c.changed) != 1 {
		t.Error("a Reservation did not wake the cycle")
	}
	s, _ := c.snapshot(resvT0.Add(-time.Minute))
	if len(s.AdvanceReservations) != 2 || s.AdvanceReservations[0].Name != "a" || s.AdvanceReservations[1].Name != "b" {
		t.Fatalf("reservations %+v", s.AdvanceReservations)
	}
	for _, tt := range []struct {
		now, want time.Time
	}{
		{resvT0.Add(-time.Minute), resvT0},
		{resvT0, resvT0.Add(30 * time.Minute)},
		{resvT0.Add(45 * time.Minute), resvT0.Add(time.Hour)},
		{resvT0.Add(time.Hour), resvT0.Add(90 * time.Minute)},
		{resvT0.Add(2 * time.Hour), time.Time{}},
	} {
		if got := c.nextReservationEdge(tt.now); !got.Equal(tt.want) {
			t.Errorf("edge after %s: %s, want %s", tt.now, got, tt.want)
		}
	}
	c.setAdvanceReservation("a", nil)
	s, _ = c.snapshot(resvT0)
	if len(s.AdvanceReservations) != 1 {
		t.Errorf("a deleted Reservation stayed: %+v", s.AdvanceReservations)
	}
}

// A job names its reservation on its PodGroup (Slurm, written, derived) or, as a group of
// one, on its pod; a manifest gang's time limit is its pods' activeDeadlineSeconds.
func TestJobReservationAndTimeLimit(t *testing.T) {
	named := func(name string, deadline *int64, resv string) *corev1.Pod {
		p := testPod(name, "1", nil, "")
		p.Spec.ActiveDeadlineSeconds = deadline
		if resv != "" {
			p.Labels[v1alpha1.ReservationAnnotation] = resv
		}
		return p
	}
	tests := []struct {
		name     string
		pgAnn    map[string]string
		pods     []*corev1.Pod
		wantResv string
		wantTL   time.Duration
	}{
		{name: "none", pods: []*corev1.Pod{named("a", nil, "")}},
		{name: "from the PodGroup", pgAnn: map[string]string{v1alpha1.ReservationAnnotation: "class"},
			pods: []*corev1.Pod{named("a", nil, "")}, wantResv: "class"},
		{name: "longest deadline", pods: []*corev1.Pod{named("a", ptr[int64](60), ""), named("b", ptr[int64](120), "")},
			wantTL: 2 * time.Minute},
		{name: "a pod without a deadline: none", pods: []*corev1.Pod{named("a", ptr[int64](60), ""), named("b", nil, "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache()
			c.setPodGroup(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns", Annotations: tt.pgAnn},
				Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "q"}})
			for _, p := range tt.pods {
				c.setPod(podKey(p.Namespace, p.Name), convertPod(p, "sluice"))
			}
			g := c.groups["ns/pg"]
			g.build("def", true, nil)
			if !g.include {
				t.Fatalf("not included: %+v", g.blocked)
			}
			if g.job.Reservation != tt.wantResv || g.job.TimeLimit != tt.wantTL {
				t.Errorf("reservation %q time limit %s; want %q %s", g.job.Reservation, g.job.TimeLimit, tt.wantResv, tt.wantTL)
			}
		})
	}
}

// A group of one's reservation is its pod's, through the PodGroup it implies.
func TestGroupOfOneReservation(t *testing.T) {
	p := testPod("solo", "1", map[string]string{v1alpha1.PodGroupDerivedAnnotation: "true", v1alpha1.ReservationAnnotation: "class"}, "")
	p.Annotations[v1alpha1.PodGroupAnnotation] = "solo-job7"
	p.Labels[v1alpha1.JobIDLabel] = "7"
	c := newCache()
	c.setPod(podKey(p.Namespace, p.Name), convertPod(p, "sluice"))
	g := c.groups["ns/solo-job7"]
	if g == nil || g.groupOfOne() == nil {
		t.Fatal("not a group of one")
	}
	g.build("def", true, nil)
	if g.job.Reservation != "class" {
		t.Errorf("reservation %q, want class", g.job.Reservation)
	}
}

// A PodGroup whose reservation changes is rebuilt, though its generation stays.
func TestPodGroupReservationChangeRebuilds(t *testing.T) {
	c := newCache()
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns", Generation: 1}, Spec: v1alpha1.PodGroupSpec{Queue: "q"}}
	c.setPodGroup(pg)
	c.groups["ns/pg"].dirty = false
	next := pg.DeepCopy()
	next.Annotations = map[string]string{v1alpha1.ReservationAnnotation: "r"}
	c.setPodGroup(next)
	if !c.groups["ns/pg"].dirty {
		t.Error("a new reservation on the PodGroup did not rebuild its job")
	}
}
