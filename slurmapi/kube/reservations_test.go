package kube

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

func reservedNode(name string, labels map[string]string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("64"), v1alpha1.GPUResource: resource.MustParse("8")}}}
}

// A reservation read for a change and written back is the object it was, however it was
// booked; a change of length keeps the form (duration or end).
func TestReservationSpecRoundTrip(t *testing.T) {
	start := metav1.NewTime(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(8 * time.Hour))
	two := int32(2)
	for _, spec := range []v1alpha1.ReservationSpec{
		{StartTime: start, Duration: &metav1.Duration{Duration: 10 * time.Minute}, Nodes: []string{"h100-0", "h100-1"}, Accounts: []string{"nlp"}},
		{StartTime: start, EndTime: &end, NodeCount: &two, Partition: "h100", Users: []string{"root"},
			Flags: []v1alpha1.ReservationFlag{v1alpha1.ReservationMaint, v1alpha1.ReservationIgnoreJobs}},
		{StartTime: start, EndTime: &end, Partition: "h100", Users: []string{"root"}, Flags: []v1alpha1.ReservationFlag{v1alpha1.ReservationPartNodes}},
	} {
		in := &v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: spec}
		m := specReservation(in)
		out := &v1alpha1.Reservation{}
		toSpec(&m, out)
		if !equality.Semantic.DeepEqual(out.Spec, in.Spec) {
			t.Errorf("round trip:\n got %+v\nwant %+v", out.Spec, in.Spec)
		}
	}
}

// What scontrol shows: the controller's nodes once resolved, named nodes at once, a
// partition's for PART_NODES before the controller has run; SPEC_NODES for named nodes;
// the nodes' CPUs and GPUs.
func TestShownReservation(t *testing.T) {
	nodes := []corev1.Node{reservedNode("h100-0", map[string]string{"pool": "h100"}), reservedNode("h100-1", map[string]string{"pool": "h100"}), reservedNode("a100-0", nil)}
	parts := []v1alpha1.Partition{{ObjectMeta: metav1.ObjectMeta{Name: "h100"}, Spec: v1alpha1.PartitionSpec{NodeSelector: map[string]string{"pool": "h100"}}}}
	start := metav1.NewTime(time.Now())
	hour := &metav1.Duration{Duration: time.Hour}
	one := int32(1)
	cases := []struct {
		name  string
		r     v1alpha1.Reservation
		nodes string
		flags string
		cpus  int64
	}{
		{"named", v1alpha1.Reservation{Spec: v1alpha1.ReservationSpec{StartTime: start, Duration: hour, Nodes: []string{"h100-0"}, Users: []string{"root"}}}, "[h100-0]", "[SPEC_NODES]", 64},
		{"count resolved", v1alpha1.Reservation{Spec: v1alpha1.ReservationSpec{StartTime: start, Duration: hour, NodeCount: &one, Partition: "h100", Users: []string{"root"},
			Flags: []v1alpha1.ReservationFlag{v1alpha1.ReservationMaint}}, Status: v1alpha1.ReservationStatus{Nodes: []string{"h100-1"}}}, "[h100-1]", "[MAINT]", 64},
		{"count not yet resolved", v1alpha1.Reservation{Spec: v1alpha1.ReservationSpec{StartTime: start, Duration: hour, NodeCount: &one, Partition: "h100", Users: []string{"root"}}}, "[]", "[]", 0},
		{"partition's", v1alpha1.Reservation{Spec: v1alpha1.ReservationSpec{StartTime: start, Duration: hour, Partition: "h100", Users: []string{"root"},
			Flags: []v1alpha1.ReservationFlag{v1alpha1.ReservationPartNodes}}}, "[h100-0 h100-1]", "[PART_NODES]", 128},
	}
	for _, tc := range cases {
		got := shownReservation(&tc.r, nodes, parts)
		if fmt.Sprint(got.Nodes) != tc.nodes || fmt.Sprint(got.Flags) != tc.flags || got.CPUs != tc.cpus || got.GPUs != tc.cpus/8 {
			t.Errorf("%s: nodes %v flags %v cpus %d gpus %d", tc.name, got.Nodes, got.Flags, got.CPUs, got.GPUs)
		}
	}
}

// Nodes of an active reservation show MAINTENANCE (a MAINT reservation's, winning) or
// RESERVED; a reservation not begun marks nothing.
func TestMarkReserved(t *testing.T) {
	now := time.Now()
	resv := func(name string, from time.Duration, flags []v1alpha1.ReservationFlag, nodes ...string) v1alpha1.Reservation {
		return v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ReservationSpec{StartTime: metav1.NewTime(now.Add(from)),
			Duration: &metav1.Duration{Duration: time.Hour}, Nodes: nodes, Users: []string{"root"}, Flags: flags}}
	}
	maint := []v1alpha1.ReservationFlag{v1alpha1.ReservationMaint}
	out := []slurmapi.Node{{Name: "a", State: []string{"IDLE"}}, {Name: "b", State: []string{"IDLE"}}, {Name: "c", State: []string{"IDLE"}}, {Name: "d", State: []string{"IDLE"}}}
	markReserved(out, []v1alpha1.Reservation{
		resv("hack", -time.Minute, nil, "a", "b"),
		resv("fw", -time.Minute, maint, "b"),
		resv("later", time.Hour, maint, "c"),
	}, nil, nil, now)
	if got := fmt.Sprint(out[0].State, out[1].State, out[2].State, out[3].State); got != "[IDLE RESERVED] [IDLE MAINTENANCE] [IDLE] [IDLE]" {
		t.Errorf("states %s", got)
	}
}
