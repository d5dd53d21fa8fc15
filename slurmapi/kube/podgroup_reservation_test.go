package kube

import (
	"testing"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// A job's reservation is kept on its PodGroup and read back from it.
func TestPodGroupKeepsTheReservation(t *testing.T) {
	d := &slurmapi.JobDesc{Name: "train", User: "alice", Account: "nlp", Partition: "h100", Nodes: 1, Tasks: 1, CPUsPerTask: 1, Reservation: "nlp-hack"}
	pg := PodGroupFor(d, 42)
	if pg.Annotations[v1alpha1.ReservationAnnotation] != "nlp-hack" {
		t.Fatalf("annotations %v", pg.Annotations)
	}
	if got := descFromPodGroup(pg).Reservation; got != "nlp-hack" {
		t.Errorf("read back %q", got)
	}
	d.Reservation = ""
	if _, ok := PodGroupFor(d, 43).Annotations[v1alpha1.ReservationAnnotation]; ok {
		t.Error("a job without a reservation carries the annotation")
	}
}
