package controller_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/agent"
	"github.com/sluicehq/sluice/remediation/controller"
	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/test/e2e"
)

var installCRDs sync.Once

// reservations is a client for Reservations on the rig, with Sluice's CRDs installed.
func reservations(t *testing.T) crclient.Client {
	t.Helper()
	rig := e2e.Rig(t)
	var err error
	installCRDs.Do(func() { err = crds.Install(context.Background(), rig.RESTConfig()) })
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := crclient.New(rig.RESTConfig(), crclient.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func deferRowRemaps(cfg *controller.Config) {
	cfg.DeferRepairs = controller.DeferRepairs{Conditions: []health.ConditionType{health.GPURowRemapPending}, MaxDelay: time.Hour, Window: 10 * time.Minute}
}

// withDeadline gives a pod a time limit, as Slurm job pods carry theirs.
func withDeadline(secs int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = &secs }
}

// TestDeferredRepairBooksAMaintenanceWindow: a row remap pending (a fault that can wait, by
// the site's DeferRepairs) leaves the node in service and books a MAINT reservation on it
// that opens when the work there ends by its time limit; the pod on the faulty GPU keeps
// running until then. When the window opens the GPU's repair starts as any GPU reset
// does (its pod evicted, a repair request open); once the fault clears the reservation
// goes.
func TestDeferredRepairBooksAMaintenanceWindow(t *testing.T) {
	const node = "h100-1"
	resv := reservations(t)
	e := startEnvWith(t, deferRowRemaps, node)
	e.runPodWith("limited", node, 3, withDeadline(8))

	e.inject(node, &agent.Faults{GPUs: []agent.InjectedGPU{{Index: 3, RowRemapPending: true}}})
	scheduled := e.waitNode(node, "repair scheduled", 30*time.Second, func(n *corev1.Node) bool {
		return remediation(n).Phase == health.PhaseRepairScheduled
	})
	got, _ := e.client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	st := remediation(got)
	if tainted(got) || st.Reservation != "repair-"+node || st.RepairAt.IsZero() {
		t.Fatalf("scheduled repair: tainted %v, state %+v; want in service with reservation repair-%s", tainted(got), st, node)
	}
	r := &v1alpha1.Reservation{}
	if err := resv.Get(context.Background(), crclient.ObjectKey{Name: st.Reservation}, r); err != nil {
		t.Fatalf("the maintenance reservation: %v", err)
	}
	if !r.HasFlag(v1alpha1.ReservationMaint) || !slices.Equal(r.Spec.Nodes, []string{node}) || !r.Spec.StartTime.Time.Equal(st.RepairAt) {
		t.Errorf("reservation %+v, want MAINT on %s from %s", r.Spec, node, st.RepairAt)
	}
	if !e.hasEvent(node, "RepairScheduled") {
		t.Error("no RepairScheduled event")
	}
	if time.Until(st.RepairAt) > time.Second && !e.exists("limited") {
		t.Error("the pod was evicted before its time limit ran out")
	}

	// The window opens: the GPU's repair goes on as any GPU reset.
	e.waitGone(30*time.Second, "limited")
	if gone := time.Now(); gone.Before(st.RepairAt) {
		t.Errorf("the pod went at %s, before the window at %s (scheduled at %s)", gone, st.RepairAt, scheduled)
	}
	e.waitNode(node, "GPU repair requested", 10*time.Second, func(n *corev1.Node) bool {
		_, open, _ := health.ParseRepair(n.Annotations)
		return open
	})

	e.inject(node, nil)
	e2e.WaitFor(t, "the maintenance reservation deleted", 30*time.Second, func(ctx context.Context) (bool, error) {
		err := resv.Get(ctx, crclient.ObjectKey{Name: st.Reservation}, &v1alpha1.Reservation{})
		return apierrors.IsNotFound(err), nil
	})
	e.waitNode(node, "state forgets the window", 10*time.Second, func(n *corev1.Node) bool {
		s := remediation(n)
		return s.Phase == "" && s.Reservation == ""
	})
}

// TestDeferredRepairCancelledWhenTheFaultClears: a fault that can wait and clears before
// its window cancels the repair: the reservation goes, the pod was never touched.
func TestDeferredRepairCancelledWhenTheFaultClears(t *testing.T) {
	const node = "h100-3"
	resv := reservations(t)
	e := startEnvWith(t, deferRowRemaps, node)
	e.runPodWith("long", node, 5, withDeadline(3600))

	e.inject(node, &agent.Faults{GPUs: []agent.InjectedGPU{{Index: 5, RowRemapPending: true}}})
	e.waitNode(node, "repair scheduled", 30*time.Second, func(n *corev1.Node) bool {
		return remediation(n).Phase == health.PhaseRepairScheduled
	})
	e.inject(node, nil)
	e.waitNode(node, "repair cancelled", 30*time.Second, func(n *corev1.Node) bool {
		return remediation(n).Phase == ""
	})
	if err := resv.Get(context.Background(), crclient.ObjectKey{Name: "repair-" + node}, &v1alpha1.Reservation{}); !apierrors.IsNotFound(err) {
		t.Errorf("the reservation is still there (err %v)", err)
	}
	if !e.hasEvent(node, "RepairCancelled") {
		t.Error("no RepairCancelled event")
	}
	if !e.exists("long") {
		t.Error("the pod was evicted though the repair was cancelled")
	}
}
