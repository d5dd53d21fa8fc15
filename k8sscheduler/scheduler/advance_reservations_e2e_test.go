package scheduler

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
)

// TestReservationHoldsItsNodes is issue 39's "done when" for Kubernetes workloads, on one
// 8-GPU node reserved for queue nlp from a little in the future: a vision job without a
// time limit does not start there, one whose activeDeadlineSeconds ends before the window
// does; nlp's job naming the reservation starts only once the window opens; the long
// vision job gets the node once the window has closed. Order is asserted against the
// window's edges, never speed.
func TestReservationHoldsItsNodes(t *testing.T) {
	e := setup(t)
	e.partition("resv", v1alpha1.PlacementBinpack)
	e.queue("resv-nlp", "", 0)
	e.queue("resv-vision", "", 0)
	node := cluster.NodeName("resv", 0)
	start := time.Now().Add(20 * time.Second).Truncate(time.Second)
	end := start.Add(20 * time.Second)
	e.create(&v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "class-" + e.ns},
		Spec: v1alpha1.ReservationSpec{StartTime: metav1.NewTime(start), EndTime: &metav1.Time{Time: end},
			Nodes: []string{node}, Accounts: []string{"resv-nlp"}}})
	e.run()

	long := e.job("long", "resv-vision", nil, nil)
	short := e.job("short", "resv-vision", nil, func(p *corev1.Pod) {
		p.Annotations[v1alpha1.SimDurationAnnotation] = "2s"
		deadline := int64(10) // ends before the window opens
		p.Spec.ActiveDeadlineSeconds = &deadline
	})
	if nodes := e.waitBound(short, waitLong); nodes[0] != node {
		t.Fatalf("short job on %s, want %s", nodes[0], node)
	}
	if p := e.pod(long[0]); p.Spec.NodeName != "" {
		t.Fatalf("a job with no time limit started on reserved node %s before the window", p.Spec.NodeName)
	}
	nlp := e.job("nlp", "resv-nlp", map[string]string{v1alpha1.ReservationAnnotation: "class-" + e.ns}, func(p *corev1.Pod) {
		p.Annotations[v1alpha1.SimDurationAnnotation] = "4s"
	})
	e.waitBound(nlp, waitLong+time.Until(start))
	if bound := time.Now(); bound.Before(start) {
		t.Errorf("nlp's job started at %s, before its reservation's window at %s", bound, start)
	}
	if p := e.pod(long[0]); p.Spec.NodeName != "" {
		t.Fatalf("the long vision job started on %s inside the window", p.Spec.NodeName)
	}
	e.waitBound(long, waitLong+time.Until(end))
	if bound := time.Now(); bound.Before(end) {
		t.Errorf("the long vision job started at %s, before the window ended at %s", bound, end)
	}
}

// TestReservationNamedByAnotherTeamWaits: a job naming a reservation that does not admit
// it waits with ReservationDeleted (the webhook refuses such pods; this is what gets past
// it, a PodGroup written directly).
func TestReservationNamedByAnotherTeamWaits(t *testing.T) {
	e := setup(t)
	e.queue("resv-other", "", 0)
	e.create(&v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "closed-" + e.ns},
		Spec: v1alpha1.ReservationSpec{StartTime: metav1.NewTime(time.Now()), Duration: &metav1.Duration{Duration: time.Hour},
			Nodes: []string{cluster.NodeName("resv", 0)}, Namespaces: []string{"someone-else"}}})
	e.run()
	e.job("sneaky", "resv-other", map[string]string{v1alpha1.ReservationAnnotation: "closed-" + e.ns}, nil)
	c := e.condition("sneaky", v1alpha1.PodGroupConditionScheduled, metav1.ConditionFalse, waitLong)
	if c.Reason != "ReservationDeleted" {
		t.Errorf("reason %s (%s), want ReservationDeleted", c.Reason, c.Message)
	}
}

// job creates a PodGroup with annotations ann in partition resv and one 8-GPU pod in it,
// changed by mod, and returns the pod's name.
func (e *env) job(name, queue string, ann map[string]string, mod func(*corev1.Pod)) []string {
	e.t.Helper()
	e.create(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Annotations: ann},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: queue, Partition: "resv"}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: e.ns,
		Annotations: map[string]string{v1alpha1.PodGroupAnnotation: name}},
		Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName, Containers: []corev1.Container{{
			Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: gpuLimit(8), Limits: gpuLimit(8)}}}}}
	if mod != nil {
		mod(pod)
	}
	if _, err := e.rig.Client().CoreV1().Pods(e.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create pod: %v", err)
	}
	return []string{pod.Name}
}
