package scheduler

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func TestSharedBind(t *testing.T) {
	gpu := []bridge.BoundGPU{{Index: 1}}
	for _, tt := range []struct {
		b    bridge.Bind
		want bool
	}{
		{bridge.Bind{}, false},
		{bridge.Bind{GPUs: gpu, GPUMilli: 1000, GPUMemoryMiB: 81920}, false}, // whole GPUs carry the device's memory
		{bridge.Bind{GPUs: gpu, GPUMilli: 250, GPUMemoryMiB: 20480}, true},
	} {
		if got := sharedBind(&tt.b); got != tt.want {
			t.Errorf("sharedBind(%+v) = %v, want %v", tt.b, got, tt.want)
		}
	}
}

func TestReservationNameFitsAPodName(t *testing.T) {
	if got := reservationName("node-1", 3); got != "gpu-node-1-3" {
		t.Errorf("name %q", got)
	}
	long := strings.Repeat("n", 253)
	a, b := reservationName(long, 0), reservationName(long+"x", 0)
	if len(a) > 253 || a == b {
		t.Errorf("long names %q, %q: want short and distinct", a, b)
	}
}

// A reservation pod holds its slot as shared in the snapshot (taken, none of it used), so
// the core puts no whole-GPU task there and counts the GPU once, through its fractions.
func TestReservationHoldsItsSlotShared(t *testing.T) {
	c := newCache()
	c.setNode(bridge.Node{Name: "n", Partition: "p", Labels: map[string]string{v1alpha1.PartitionLabel: "p"},
		Allocatable: bridge.Resources{GPUMilli: 2000},
		GPUs:        []bridge.GPU{{Index: 0, UUID: "GPU-a", MemoryMiB: 100}, {Index: 1, UUID: "GPU-b", MemoryMiB: 100}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{v1alpha1.PartitionLabel: "p"}}})
	s := &Scheduler{cfg: Config{}.withDefaults(), cache: c}
	pod := s.reservationPod(slot{"n", 1})
	pod.UID = "u1"
	pod.Annotations[v1alpha1.ReservedGPUAnnotation] = "GPU-a"
	slim := slimPod(pod, v1alpha1.DefaultSchedulerName)
	if !isReservation(slim, "kube-system") || isReservation(slim, "tenant") {
		t.Fatalf("isReservation wrong for %+v", slim.ObjectMeta)
	}
	c.setReservation(slim, false)
	e := convertPod(slim, v1alpha1.DefaultSchedulerName)
	e.reservation = true
	c.setPod("kube-system/"+pod.Name, e)

	snap, _ := c.snapshot(metav1.Now().Time)
	var node bridge.Node
	for _, n := range snap.Nodes {
		if n.Name == "n" {
			node = n
		}
	}
	if len(node.GPUs) != 2 || len(node.GPUs[0].Taken) != 0 || len(node.GPUs[1].Taken) != 1 || node.GPUs[1].Taken[0].Milli != 0 {
		t.Fatalf("GPUs %+v: want slot 1 held with nothing used, slot 0 free", node.GPUs)
	}
	if len(c.sharedSlots) != 0 {
		t.Errorf("the reservation counted as a user of its own slot: %v", c.sharedSlots)
	}
	r := c.reservations[slot{"n", 1}]
	if r == nil || r.device != "GPU-a" || r.pod != pod.Name {
		t.Fatalf("reservation %+v", r)
	}
	// a shared bind on the slot resolves to the device the kubelet gave the reservation
	binds, ready, work := s.reservedBindsLocked([]bridge.Bind{{Node: "n", GPUs: []bridge.BoundGPU{{Index: 1, UUID: "GPU-b"}}, GPUMilli: 250, GPUMemoryMiB: 25}})
	if !ready || len(work) != 0 || binds[0].GPUs[0].UUID != "GPU-a" {
		t.Errorf("binds %+v ready %v work %d: want the reservation's device", binds, ready, len(work))
	}
	// one on the other slot needs a reservation first
	_, ready, work = s.reservedBindsLocked([]bridge.Bind{{Node: "n", GPUs: []bridge.BoundGPU{{Index: 0}}, GPUMilli: 500, GPUMemoryMiB: 50}})
	if ready || len(work) != 1 || c.reservations[slot{"n", 0}] == nil || !c.reservations[slot{"n", 0}].creating {
		t.Errorf("ready %v work %d: want a reservation asked for", ready, len(work))
	}
}

func TestReservationPodAsksTheDevicePluginForOneGPU(t *testing.T) {
	s := &Scheduler{cfg: Config{GPUReservationNamespace: "sluice", GPUReservationServiceAccount: "sluice-gpu-reservation"}.withDefaults()}
	p := s.reservationPod(slot{"node-7", 2})
	c := p.Spec.Containers[0]
	one := resource.MustParse("1")
	if q := c.Resources.Requests[v1alpha1.GPUResource]; q.Cmp(one) != 0 {
		t.Errorf("requests %v", c.Resources.Requests)
	}
	if q := c.Resources.Limits[v1alpha1.GPUResource]; q.Cmp(one) != 0 {
		t.Errorf("limits %v", c.Resources.Limits)
	}
	if p.Namespace != "sluice" || p.Spec.NodeName != "node-7" || p.Spec.ServiceAccountName != "sluice-gpu-reservation" ||
		p.Spec.SchedulerName != v1alpha1.GPUReservationSchedulerName || p.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("pod %+v", p)
	}
	if strings.Join(c.Command, " ") != "/sluice gpu-reservation" || c.Image != DefaultGPUReservationImage {
		t.Errorf("container %+v", c)
	}
	if a, err := v1alpha1.ParseGPUAssignment(p.Annotations[v1alpha1.GPUAssignmentAnnotation]); err != nil || len(a.GPUs) != 1 || a.GPUs[0].Index != 2 || a.Portion != 0 {
		t.Errorf("assignment %+v %v", a, err)
	}
}
