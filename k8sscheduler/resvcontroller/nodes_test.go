package resvcontroller

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

var t0 = time.Date(2030, 3, 4, 9, 0, 0, 0, time.UTC)

func resv(name string, mutate func(*v1alpha1.Reservation)) *v1alpha1.Reservation {
	r := &v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: v1alpha1.ReservationSpec{StartTime: metav1.NewTime(t0), Duration: &metav1.Duration{Duration: time.Hour},
			Namespaces: []string{"nlp"}}}
	if mutate != nil {
		mutate(r)
	}
	return r
}

func TestResolve(t *testing.T) {
	h100 := map[string]string{v1alpha1.PartitionLabel: "h100"}
	a100 := map[string]string{"pool": "a100"}
	nodes := []Node{
		{Name: "h1", Labels: h100, BusyUntil: t0.Add(time.Hour)},
		{Name: "h2", Labels: h100},
		{Name: "h3", Labels: h100, BusyUntil: Forever},
		{Name: "h4", Labels: h100, Unschedulable: true},
		{Name: "a1", Labels: a100},
	}
	parts := map[string]*v1alpha1.Partition{"a100": {ObjectMeta: metav1.ObjectMeta{Name: "a100"},
		Spec: v1alpha1.PartitionSpec{NodeSelector: map[string]string{"pool": "a100"}}}}
	count := func(n int32, part string, flags ...v1alpha1.ReservationFlag) func(*v1alpha1.Reservation) {
		return func(r *v1alpha1.Reservation) {
			r.Spec.NodeCount, r.Spec.Partition, r.Spec.Flags = ptr.To(n), part, flags
		}
	}
	tests := []struct {
		name      string
		r         *v1alpha1.Reservation
		taken     map[string]bool
		wantNodes []string
		wantReady bool
		reason    string
	}{
		{name: "host list", r: resv("r", func(r *v1alpha1.Reservation) { r.Spec.Nodes = []string{"h2", "a1"} }),
			wantNodes: []string{"h2", "a1"}, wantReady: true, reason: ReasonResolved},
		{name: "unknown host", r: resv("r", func(r *v1alpha1.Reservation) { r.Spec.Nodes = []string{"h2", "zz"} }),
			wantNodes: []string{"h2", "zz"}, reason: ReasonUnknownNodes},
		{name: "idle first, then soonest free", r: resv("r", count(2, "h100")), wantNodes: []string{"h1", "h2"}, wantReady: true, reason: ReasonResolved},
		{name: "nodes another reservation holds are left out", r: resv("r", count(2, "h100")), taken: map[string]bool{"h1": true},
			wantNodes: []string{"h2", "h3"}, wantReady: true, reason: ReasonResolved},
		{name: "not enough", r: resv("r", count(4, "h100")), reason: ReasonNotEnoughNodes},
		{name: "partition by selector", r: resv("r", count(1, "a100")), wantNodes: []string{"a1"}, wantReady: true, reason: ReasonResolved},
		{name: "unknown partition", r: resv("r", count(1, "nope")), reason: ReasonUnknownPart},
		{name: "ANY_NODES", r: resv("r", count(4, "", v1alpha1.ReservationAnyNodes)), wantNodes: []string{"a1", "h1", "h2", "h3"},
			wantReady: true, reason: ReasonResolved},
		{name: "chosen once", r: resv("r", func(r *v1alpha1.Reservation) {
			count(2, "h100")(r)
			r.Status.Nodes = []string{"h3", "h4"}
		}), wantNodes: []string{"h3", "h4"}, wantReady: true, reason: ReasonResolved},
		{name: "PART_NODES", r: resv("r", func(r *v1alpha1.Reservation) {
			r.Spec.Partition, r.Spec.Flags = "h100", []v1alpha1.ReservationFlag{v1alpha1.ReservationPartNodes}
		}), wantNodes: []string{"h1", "h2", "h3", "h4"}, wantReady: true, reason: ReasonResolved},
		{name: "PART_NODES of an unknown partition", r: resv("r", func(r *v1alpha1.Reservation) {
			r.Spec.Partition, r.Spec.Flags = "nope", []v1alpha1.ReservationFlag{v1alpha1.ReservationPartNodes}
		}), reason: ReasonUnknownPart},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Resolve(tt.r, nodes, parts, tt.taken)
			if !slices.Equal(got.Nodes, tt.wantNodes) || got.Ready != tt.wantReady || got.Reason != tt.reason {
				t.Errorf("got %+v; want nodes %v ready %v reason %s", got, tt.wantNodes, tt.wantReady, tt.reason)
			}
			if !got.Ready && got.Message == "" {
				t.Error("an unresolved reservation must say why")
			}
		})
	}
}

func TestWindowsOverlap(t *testing.T) {
	at := func(start time.Duration, flags ...v1alpha1.ReservationFlag) *v1alpha1.Reservation {
		return resv("x", func(r *v1alpha1.Reservation) {
			r.Spec.StartTime = metav1.NewTime(t0.Add(start))
			r.Spec.Flags = flags
		})
	}
	tests := []struct {
		name string
		a, b *v1alpha1.Reservation
		now  time.Time
		want bool
	}{
		{"same window", at(0), at(0), t0, true},
		{"back to back", at(0), at(time.Hour), t0, false},
		{"half over", at(0), at(30 * time.Minute), t0, true},
		{"daily meets a later one", at(0, v1alpha1.ReservationDaily), at(48 * time.Hour), t0, true},
		{"daily misses an off-hour one", at(0, v1alpha1.ReservationDaily), at(50 * time.Hour), t0, false},
		{"weekly meets daily", at(3*time.Hour, v1alpha1.ReservationWeekly), at(3*24*time.Hour+3*time.Hour+10*time.Minute, v1alpha1.ReservationDaily), t0, true},
		{"an ended window does not count", at(0), at(0), t0.Add(2 * time.Hour), false},
	}
	for _, tt := range tests {
		if got := WindowsOverlap(tt.a, tt.b, tt.now); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
		if got := WindowsOverlap(tt.b, tt.a, tt.now); got != tt.want {
			t.Errorf("%s (swapped): got %v, want %v", tt.name, got, tt.want)
		}
	}
}
