package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/health"
)

// A fault that can wait (Config.DeferRepairs) is repaired in a maintenance window rather
// than at once: the controller books a MAINT reservation on the node that opens when the
// node's work ends by its time limits (at most MaxDelay away). Until then the node stays
// in service, and the scheduler starts there only work that ends before the window. The
// repair starts when the window opens or the node has no work left, whichever is first,
// and goes on as any other (a GPU reset, or quarantine, drain and validation); the
// reservation is deleted once the node is back. A fault that cannot wait arriving
// meanwhile starts the repair at once; faults that clear meanwhile cancel it.

// repairReservation names the maintenance reservation of a node's scheduled repair.
func repairReservation(node string) string { return "repair-" + node }

// mayDefer reports whether every fault may wait for a maintenance window.
func (c *controller) mayDefer(faults []activeFault) bool {
	if len(faults) == 0 || len(c.cfg.DeferRepairs.Conditions) == 0 || c.resv == nil {
		return false
	}
	for _, f := range faults {
		if !slices.Contains(c.cfg.DeferRepairs.Conditions, health.ConditionType(f.Type)) {
			return false
		}
	}
	return true
}

// workEnds is when the node's work ends by its pods' time limits (jobstate.WorkEnds:
// activeDeadlineSeconds, as Slurm job pods carry them); ok is false when some pod has
// none. A node with no work ends now.
func (c *controller) workEnds(node string, now time.Time) (time.Time, bool, error) {
	objs, err := c.pods.ByIndex(podsByNode, node)
	if err != nil {
		return now, false, err
	}
	end := now
	for _, obj := range objs {
		p := obj.(*corev1.Pod)
		if !mustLeave(p, nil) || p.DeletionTimestamp != nil {
			continue
		}
		e := jobstate.WorkEnds(p, nil)
		if e.Equal(jobstate.Forever) {
			return now, false, nil
		}
		if e.After(end) {
			end = e
		}
	}
	return end, true, nil
}

// scheduleRepair books the maintenance window for faults that may wait and leaves the node
// in service until it opens; with no work on the node the repair starts at once.
func (c *controller) scheduleRepair(ctx context.Context, node *corev1.Node, st health.RemediationState, faults []activeFault) (time.Duration, error) {
	now := c.now()
	ends, known, err := c.workEnds(node.Name, now)
	if err != nil {
		return 0, err
	}
	latest := now.Add(c.cfg.DeferRepairs.MaxDelay)
	at := ends
	if !known || at.After(latest) {
		at = latest
	}
	if !at.After(now) {
		return c.repairNow(ctx, node, st, faults) // nothing to wait for
	}
	at = at.Truncate(time.Second).Add(time.Second)
	name := repairReservation(node.Name)
	if err := c.bookWindow(ctx, name, node.Name, at, reasonOf(faults)); err != nil {
		if !refused(err) {
			return 0, err
		}
		// Admission refused the window (a MAINT one may overlap other reservations, so
		// this is rare: the node gone, say): repairing now is what would have happened
		// without DeferRepairs.
		c.events.Eventf(nodeRef(node.Name), corev1.EventTypeWarning, "RepairNotDeferred", "%v; repairing now", err)
		return c.repairNow(ctx, node, st, faults)
	}
	from := st.Phase
	st.History = faultHistory(c.cfg.Escalation.prune(st.History, now), faults, uuids(unhealthyGPUs(node)), now, false)
	st.Phase, st.Since, st.Action, st.Reason = health.PhaseRepairScheduled, now, worstAction(faults).String(), reasonOf(faults)
	st.RepairAt, st.Reservation = at, name
	if err := c.advance(ctx, node.Name, from, st.ValidationPod, func(n *corev1.Node) {
		setAnnotation(n, health.RemediationAnnotation, st.Format())
	}); err != nil {
		return 0, moved(err)
	}
	c.events.Eventf(nodeRef(node.Name), corev1.EventTypeWarning, "RepairScheduled",
		"%s can wait: repair (%s) scheduled for %s in maintenance reservation %s; running work may finish, work that would run into it stays off",
		st.Reason, worstAction(faults).Advice(), at.UTC().Format(time.RFC3339), name)
	return at.Sub(now), nil
}

// bookWindow creates (or moves) the node's maintenance reservation.
func (c *controller) bookWindow(ctx context.Context, name, node string, at time.Time, reason string) error {
	r := &v1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{repairLabel: node},
			Annotations: map[string]string{repairReasonAnnotation: reason}},
		Spec: v1alpha1.ReservationSpec{StartTime: metav1.NewTime(at), Duration: &metav1.Duration{Duration: c.cfg.DeferRepairs.Window},
			Nodes: []string{node}, Namespaces: []string{c.cfg.Validation.Namespace},
			// IGNORE_JOBS: work without a time limit may still be there when it opens; the
			// repair drains it then, as any repair would have at once.
			Flags: []v1alpha1.ReservationFlag{v1alpha1.ReservationMaint, v1alpha1.ReservationIgnoreJobs}},
	}
	err := c.resv.Create(ctx, r)
	if apierrors.IsAlreadyExists(err) {
		cur := &v1alpha1.Reservation{}
		if err := c.resv.Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
			return err
		}
		cur.Spec, cur.Labels, cur.Annotations = r.Spec, r.Labels, r.Annotations
		err = c.resv.Update(ctx, cur)
	}
	if err != nil {
		return fmt.Errorf("book maintenance reservation %s: %w", name, err)
	}
	return nil
}

// refused reports whether the API server turned a reservation down for what it says
// (admission, validation), not for a passing failure worth retrying.
func refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)
}

// Labels of a repair's reservation: which node, and why.
const (
	repairLabel            = "sluice.dev/repair-node"
	repairReasonAnnotation = "sluice.dev/repair-reason"
)

// awaitWindow follows a scheduled repair: cancelled when the faults clear, started when
// the window opens, the node empties, or a fault that cannot wait arrives.
func (c *controller) awaitWindow(ctx context.Context, node *corev1.Node, st health.RemediationState, faults []activeFault) (time.Duration, error) {
	now := c.now()
	if len(faults) == 0 {
		if err := c.dropWindow(ctx, st.Reservation); err != nil {
			return 0, err
		}
		kept := health.RemediationState{History: st.History}
		if err := c.advance(ctx, node.Name, st.Phase, st.ValidationPod, func(n *corev1.Node) {
			setAnnotation(n, health.RemediationAnnotation, kept.Format())
		}); err != nil {
			return 0, moved(err)
		}
		c.events.Eventf(nodeRef(node.Name), corev1.EventTypeNormal, "RepairCancelled", "the faults cleared before the maintenance window; reservation %s deleted", st.Reservation)
		return 0, nil
	}
	ends, known, err := c.workEnds(node.Name, now)
	if err != nil {
		return 0, err
	}
	empty := known && !ends.After(now)
	if c.mayDefer(faults) && now.Before(st.RepairAt) && !empty {
		return st.RepairAt.Sub(now), nil
	}
	return c.repairNow(ctx, node, st, faults)
}

// repairNow starts the repair as if the faults had just come: quarantine for node faults,
// a GPU reset for GPU-local ones. A booked reservation stays until the node is back.
func (c *controller) repairNow(ctx context.Context, node *corev1.Node, st health.RemediationState, faults []activeFault) (time.Duration, error) {
	nodeFaults, local := split(faults)
	if st.Phase == health.PhaseRepairScheduled {
		// quarantine and gpuLocal start from an in-service node; the reservation is kept.
		from := st.Phase
		st.Phase, st.Since = "", time.Time{}
		st.History = st.History[:max(0, len(st.History)-len(faults))] // they record the faults again
		if err := c.advance(ctx, node.Name, from, st.ValidationPod, func(n *corev1.Node) {
			setAnnotation(n, health.RemediationAnnotation, st.Format())
		}); err != nil {
			return 0, moved(err)
		}
	}
	if len(nodeFaults) > 0 {
		return c.quarantine(ctx, node, st, nodeFaults)
	}
	return c.gpuLocal(ctx, node, st, local)
}

// dropWindow deletes a repair's reservation; one already gone is fine.
func (c *controller) dropWindow(ctx context.Context, name string) error {
	if name == "" || c.resv == nil {
		return nil
	}
	err := c.resv.Delete(ctx, &v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete maintenance reservation %s: %w", name, err)
	}
	return nil
}

// closeWindow deletes the reservation of a repair once the node is in service and healthy
// again, and forgets it.
func (c *controller) closeWindow(ctx context.Context, node string, st health.RemediationState) error {
	if err := c.dropWindow(ctx, st.Reservation); err != nil {
		return err
	}
	st.Reservation, st.RepairAt = "", time.Time{}
	return c.updateNode(ctx, node, func(n *corev1.Node) {
		setAnnotation(n, health.RemediationAnnotation, st.Format())
	})
}
