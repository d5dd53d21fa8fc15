package resvcontroller

import (
	"time"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// overlapHorizon bounds how far ahead two repeating windows are compared: a week of
// weekly windows meets every daily one, so eight weeks is ample and keeps the check
// to a few hundred comparisons.
const overlapHorizon = 8 * 7 * 24 * time.Hour

// State is where the reservation is at now: before its current window, inside it, or
// after it (only a reservation that does not repeat stays Ended).
func State(r *v1alpha1.Reservation, now time.Time) v1alpha1.ReservationState {
	start, end := r.WindowAt(now)
	switch {
	case now.Before(start):
		return v1alpha1.ReservationInactive
	case now.Before(end):
		return v1alpha1.ReservationActive
	}
	return v1alpha1.ReservationEnded
}

// windows lists r's windows from the one current at now until until: one for a
// reservation that does not repeat, else each repeat.
func windows(r *v1alpha1.Reservation, now, until time.Time) [][2]time.Time {
	start, end := r.WindowAt(now)
	p := r.Period()
	out := [][2]time.Time{{start, end}}
	for p > 0 {
		start, end = start.Add(p), end.Add(p)
		if !start.Before(until) {
			break
		}
		out = append(out, [2]time.Time{start, end})
	}
	return out
}

// WindowsOverlap reports whether a window of a meets one of b's, from now on (ended
// windows do not count), repeats included up to overlapHorizon.
func WindowsOverlap(a, b *v1alpha1.Reservation, now time.Time) bool {
	until := now.Add(overlapHorizon)
	wb := windows(b, now, until)
	for _, x := range windows(a, now, until) {
		if !x[1].After(now) {
			continue
		}
		for _, y := range wb {
			if y[1].After(now) && x[0].Before(y[1]) && y[0].Before(x[1]) {
				return true
			}
		}
	}
	return false
}
