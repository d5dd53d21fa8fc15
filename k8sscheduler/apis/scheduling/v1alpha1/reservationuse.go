package v1alpha1

import (
	"slices"
	"time"
)

// ReservationOf is the reservation a pod, an owner or a PodGroup names: its
// ReservationAnnotation, else a label of that key (a label is what kubectl's selectors and
// a Job template's labels carry most easily), else "".
func ReservationOf(labels, annotations map[string]string) string {
	if r := annotations[ReservationAnnotation]; r != "" {
		return r
	}
	return labels[ReservationAnnotation]
}

// AdmitsWorkload reports whether a Kubernetes workload in namespace, charged to queue,
// may run in the reservation: it lists the namespace, or the queue (an account), which
// admission has already checked the namespace may use. Users are Slurm users, which a
// manifest workload has none of.
func (r *Reservation) AdmitsWorkload(namespace, queue string) bool {
	return slices.Contains(r.Spec.Namespaces, namespace) || (queue != "" && slices.Contains(r.Spec.Accounts, queue))
}

// Period is how often the window repeats: a day (DAILY), a week (WEEKLY), else 0.
func (r *Reservation) Period() time.Duration {
	switch {
	case r.HasFlag(ReservationWeekly):
		return 7 * 24 * time.Hour
	case r.HasFlag(ReservationDaily):
		return 24 * time.Hour
	}
	return 0
}

// WindowAt is the window that holds now or, when none does, the next one to begin (the
// last one, ended, for a reservation that does not repeat): from the current Window,
// moved on by whole Periods.
func (r *Reservation) WindowAt(now time.Time) (start, end time.Time) {
	s, e := r.Window()
	start, end = s.Time, e.Time
	if p := r.Period(); p > 0 && !end.After(now) {
		n := now.Sub(end)/p + 1 // whole periods until the window ends after now
		start, end = start.Add(n*p), end.Add(n*p)
	}
	return start, end
}

// NextEdge is the next time after now at which the reservation's state changes: its
// window's start or end; zero when it has ended for good.
func (r *Reservation) NextEdge(now time.Time) time.Time {
	start, end := r.WindowAt(now)
	switch {
	case start.After(now):
		return start
	case end.After(now):
		return end
	}
	return time.Time{}
}
