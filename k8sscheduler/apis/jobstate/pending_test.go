package jobstate

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// The core's reservation reasons reach the views as Slurm spells them, whatever the
// condition reason had to be.
func TestPendingReasonSpellsReservationReasons(t *testing.T) {
	for cond, want := range map[string]string{
		"Reservation":                            "Reservation",
		"ReservationDeleted":                     "ReservationDeleted",
		"ReqNodeNotAvail,ReservedForMaintenance": "ReqNodeNotAvail, Reserved for maintenance",
	} {
		pg := &v1alpha1.PodGroup{Status: v1alpha1.PodGroupStatus{Conditions: []metav1.Condition{
			{Type: v1alpha1.PodGroupConditionScheduled, Status: metav1.ConditionFalse, Reason: cond},
		}}}
		if got := PendingReason(pg, time.Now()); got != want {
			t.Errorf("condition reason %q reads %q, want %q", cond, got, want)
		}
	}
}
