package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReservationOf(t *testing.T) {
	for _, c := range []struct {
		name        string
		labels, ann map[string]string
		want        string
	}{
		{"none", nil, nil, ""},
		{"label", map[string]string{ReservationAnnotation: "a"}, nil, "a"},
		{"annotation wins", map[string]string{ReservationAnnotation: "a"}, map[string]string{ReservationAnnotation: "b"}, "b"},
		{"empty annotation falls back", map[string]string{ReservationAnnotation: "a"}, map[string]string{ReservationAnnotation: ""}, "a"},
	} {
		if got := ReservationOf(c.labels, c.ann); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestAdmitsWorkload(t *testing.T) {
	r := &Reservation{Spec: ReservationSpec{Namespaces: []string{"nlp"}, Accounts: []string{"vision"}, Users: []string{"alice"}}}
	for _, c := range []struct {
		ns, queue string
		want      bool
	}{
		{"nlp", "default", true}, {"other", "vision", true}, {"other", "default", false},
		{"alice", "", false}, // users are Slurm users, not namespaces
	} {
		if got := r.AdmitsWorkload(c.ns, c.queue); got != c.want {
			t.Errorf("namespace %s queue %s: got %v, want %v", c.ns, c.queue, got, c.want)
		}
	}
}

func TestWindowAt(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	hour := metav1.Duration{Duration: time.Hour}
	mk := func(flags ...ReservationFlag) *Reservation {
		return &Reservation{Spec: ReservationSpec{StartTime: metav1.NewTime(t0), Duration: &hour, Flags: flags}}
	}
	for _, c := range []struct {
		name      string
		r         *Reservation
		now       time.Time
		wantStart time.Time
	}{
		{"before", mk(), t0.Add(-time.Hour), t0},
		{"inside", mk(ReservationDaily), t0.Add(30 * time.Minute), t0},
		{"once, ended", mk(), t0.Add(48 * time.Hour), t0},
		{"daily, ended", mk(ReservationDaily), t0.Add(2 * time.Hour), t0.Add(24 * time.Hour)},
		{"daily, at the end", mk(ReservationDaily), t0.Add(time.Hour), t0.Add(24 * time.Hour)},
		{"daily, days later", mk(ReservationDaily), t0.Add(72*time.Hour + 10*time.Minute), t0.Add(72 * time.Hour)},
		{"weekly", mk(ReservationWeekly), t0.Add(2 * time.Hour), t0.Add(7 * 24 * time.Hour)},
	} {
		start, end := c.r.WindowAt(c.now)
		if !start.Equal(c.wantStart) || end.Sub(start) != time.Hour {
			t.Errorf("%s: got %s-%s, want start %s", c.name, start, end, c.wantStart)
		}
	}
}
