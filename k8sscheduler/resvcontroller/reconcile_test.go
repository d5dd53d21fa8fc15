package resvcontroller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func TestDesired(t *testing.T) {
	ok := Resolution{Nodes: []string{"n1"}, Ready: true, Reason: ReasonResolved, Message: "1 node(s)"}
	daily := func(r *v1alpha1.Reservation) { r.Spec.Flags = []v1alpha1.ReservationFlag{v1alpha1.ReservationDaily} }
	tests := []struct {
		name      string
		r         *v1alpha1.Reservation
		now       time.Time
		res       Resolution
		inUse     bool
		state     v1alpha1.ReservationState
		start     time.Time
		ready     metav1.ConditionStatus
		wantUsed  bool
		nextAfter time.Duration
	}{
		{name: "before", r: resv("r", nil), now: t0.Add(-time.Minute), res: ok, state: v1alpha1.ReservationInactive, start: t0,
			ready: metav1.ConditionTrue, nextAfter: time.Minute},
		{name: "inside, in use", r: resv("r", nil), now: t0.Add(time.Minute), res: ok, inUse: true, state: v1alpha1.ReservationActive,
			start: t0, ready: metav1.ConditionTrue, wantUsed: true, nextAfter: 59 * time.Minute},
		{name: "after", r: resv("r", nil), now: t0.Add(2 * time.Hour), res: ok, state: v1alpha1.ReservationEnded, start: t0, ready: metav1.ConditionTrue},
		{name: "daily moves on", r: resv("r", daily), now: t0.Add(2 * time.Hour), res: ok, state: v1alpha1.ReservationInactive,
			start: t0.Add(24 * time.Hour), ready: metav1.ConditionTrue, nextAfter: 22 * time.Hour},
		{name: "an edited spec starts from it again", r: resv("r", func(r *v1alpha1.Reservation) {
			r.Generation = 2
			r.Status.StartTime, r.Status.EndTime = &metav1.Time{Time: t0.Add(-5 * time.Hour)}, &metav1.Time{Time: t0.Add(-4 * time.Hour)}
			r.Status.Conditions = []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: ReasonResolved}}
		}), now: t0.Add(-time.Minute), res: ok, state: v1alpha1.ReservationInactive, start: t0, ready: metav1.ConditionTrue, nextAfter: time.Minute},
		{name: "unresolved", r: resv("r", nil), now: t0.Add(-time.Minute), res: Resolution{Reason: ReasonNotEnoughNodes, Message: "m"},
			state: v1alpha1.ReservationInactive, start: t0, ready: metav1.ConditionFalse, nextAfter: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := desired(tt.r, tt.now, tt.res, tt.inUse)
			s := got.Status
			if s.State != tt.state || !s.StartTime.Time.Equal(tt.start) || s.EndTime.Sub(s.StartTime.Time) != time.Hour {
				t.Errorf("state %s window %s-%s; want %s from %s", s.State, s.StartTime, s.EndTime, tt.state, tt.start)
			}
			if c := meta.FindStatusCondition(s.Conditions, ConditionReady); c == nil || c.Status != tt.ready || c.ObservedGeneration != tt.r.Generation {
				t.Errorf("Ready %+v, want %s", c, tt.ready)
			}
			if meta.IsStatusConditionTrue(s.Conditions, ConditionUsed) != tt.wantUsed {
				t.Errorf("Used = %v, want %v", !tt.wantUsed, tt.wantUsed)
			}
			var next time.Duration
			if e := got.NextEdge(tt.now); !e.IsZero() {
				next = e.Sub(tt.now)
			}
			if next != tt.nextAfter {
				t.Errorf("next edge in %s, want %s", next, tt.nextAfter)
			}
		})
	}
}
