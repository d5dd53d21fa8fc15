package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/health"
)

// startValidation runs the validation pod on the repaired node. It is bound to the node
// directly and tolerates every taint, since the node is still quarantined.
func (c *controller) startValidation(ctx context.Context, node *corev1.Node, st health.RemediationState) (time.Duration, error) {
	// The informer may lag our own last write: were the node already Validating, a second
	// validation pod would be started and never cleaned up.
	fresh, err := c.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	if cur, err := health.ParseRemediation(fresh.Annotations); err == nil && cur.Phase != health.PhaseAwaitingRepair {
		return 0, nil
	}
	v := c.cfg.Validation
	now := c.now()
	pod := c.validationPod(node, fmt.Sprintf("sluice-validate-%s-%d", node.Name, now.Unix()))
	// AlreadyExists: created by this same start, retried after the node update failed.
	if _, err := c.client.CoreV1().Pods(v.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, fmt.Errorf("create validation pod: %w", err)
	}
	from, fromPod := st.Phase, st.ValidationPod
	st.Phase, st.ValidationPod, st.ValidationAt = health.PhaseValidating, pod.Name, now
	if err := c.advance(ctx, node.Name, from, fromPod, func(n *corev1.Node) { setAnnotation(n, health.RemediationAnnotation, st.Format()) }); err != nil {
		if errors.Is(err, errMoved) {
			c.deleteValidationPod(ctx, pod.Name)
		}
		return 0, moved(err)
	}
	c.events.Eventf(nodeRef(node.Name), corev1.EventTypeNormal, "ValidationStarted", "pod %s/%s", v.Namespace, pod.Name)
	return c.cfg.RetryInterval, nil
}

// validationPod is the validation pod for a node: bound to it directly, tolerating every
// taint (a repaired node is still quarantined), asking for every GPU.
func (c *controller) validationPod(node *corev1.Node, name string) *corev1.Pod {
	v := c.cfg.Validation
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   v.Namespace,
			Labels:      map[string]string{ValidationLabel: node.Name},
			Annotations: map[string]string{},
		},
		Spec: corev1.PodSpec{
			NodeName:      node.Name,
			RestartPolicy: corev1.RestartPolicyNever,
			Tolerations:   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "validate", Image: v.Image, Command: v.Command,
				Resources: corev1.ResourceRequirements{Limits: gpuLimits(node)},
			}},
		},
	}
	for k, val := range v.Labels {
		pod.Labels[k] = val
	}
	for k, val := range v.Annotations {
		pod.Annotations[k] = val
	}
	return pod
}

// gpuLimits asks for every GPU of the node, so the diagnostic covers them all.
func gpuLimits(node *corev1.Node) corev1.ResourceList {
	const gpu = corev1.ResourceName(v1alpha1.GPUResource)
	if q, ok := node.Status.Allocatable[gpu]; ok && !q.IsZero() {
		return corev1.ResourceList{gpu: q}
	}
	return nil
}

// validate returns the node once its validation pod succeeded and no fault is left. A
// failed or overdue validation means the repair did not hold: it escalates to hardware repair.
func (c *controller) validate(ctx context.Context, node *corev1.Node, st health.RemediationState, faults []activeFault) (time.Duration, error) {
	ns := c.cfg.Validation.Namespace
	pod, err := c.client.CoreV1().Pods(ns).Get(ctx, st.ValidationPod, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	var failure string
	switch {
	case apierrors.IsNotFound(err):
		failure = "validation pod disappeared"
	case len(faults) > 0:
		failure = "faults came back during validation: " + reasonOf(faults)
	case pod.Status.Phase == corev1.PodFailed:
		failure = "validation pod failed"
	case pod.Status.Phase == corev1.PodSucceeded:
		if err := c.returnNode(ctx, node, st); err != nil {
			return 0, err
		}
		c.recordRepairValidation(ctx, node, st, health.ValidationPassed, "")
		return 0, nil
	case c.now().Sub(st.ValidationAt) > c.cfg.Validation.Timeout:
		failure = "validation did not finish within " + c.cfg.Validation.Timeout.String()
	default:
		return c.cfg.RetryInterval, nil
	}
	now := c.now()
	from, fromPod := st.Phase, st.ValidationPod
	st.Phase, st.Escalated, st.Action, st.ValidationPod = health.PhaseAwaitingRepair, true, health.ActionHardwareRepair.String(), ""
	st.Reason = failure
	req := health.RepairRequest{Action: st.Action, Reason: failure, RequestedAt: now, Escalated: true}
	if err := c.advance(ctx, node.Name, from, fromPod, func(n *corev1.Node) {
		setAnnotation(n, health.RemediationAnnotation, st.Format())
		setAnnotation(n, health.RepairAnnotation, req.Format())
	}); err != nil {
		return 0, moved(err)
	}
	c.deleteValidationPod(ctx, fromPod)
	c.events.Eventf(nodeRef(node.Name), corev1.EventTypeWarning, "ValidationFailed", "%s; hardware repair requested", failure)
	c.recordRepairValidation(ctx, node, health.RemediationState{ValidationPod: fromPod, ValidationAt: st.ValidationAt}, health.ValidationFailedRun, failure)
	return 0, nil
}

// recordRepairValidation writes a repaired node's validation as its last validation and
// into the history.
func (c *controller) recordRepairValidation(ctx context.Context, node *corev1.Node, st health.RemediationState, result, detail string) {
	run := health.ValidationRun{Kind: health.ValidationRepair, Pod: st.ValidationPod, StartedAt: st.ValidationAt,
		FinishedAt: c.now(), Result: result, Detail: detail}
	if err := c.updateNode(ctx, node.Name, func(n *corev1.Node) { setAnnotation(n, health.LastValidationAnnotation, run.Format()) }); err != nil {
		klog.FromContext(ctx).Error(err, "remediation: recording a validation", "node", node.Name)
	}
	if result == health.ValidationPassed {
		if err := c.setValidationCondition(ctx, node.Name, corev1.ConditionFalse, health.ReasonValidationPassed, run.Summary(run.FinishedAt)); err != nil {
			klog.FromContext(ctx).Error(err, "remediation: writing a condition", "node", node.Name, "condition", health.ValidationFailed)
		}
	}
	if c.cfg.History != nil {
		if err := c.cfg.History.RecordValidation(ctx, node.Name, node.Labels[c.cfg.PartitionLabel], run); err != nil {
			c.events.Eventf(nodeRef(node.Name), corev1.EventTypeWarning, "ValidationNotRecorded", "%v", err)
		}
	}
}

// returnNode lifts the quarantine and closes the downtime; the history stays for escalation.
func (c *controller) returnNode(ctx context.Context, node *corev1.Node, st health.RemediationState) error {
	since, reason := st.Since, st.Reason
	kept := health.RemediationState{History: st.History}
	if err := c.advance(ctx, node.Name, st.Phase, st.ValidationPod, func(n *corev1.Node) {
		removeTaint(n)
		setAnnotation(n, health.RemediationAnnotation, kept.Format())
		delete(n.Annotations, health.RepairAnnotation)
	}); err != nil {
		return moved(err)
	}
	c.recordDown(ctx, Downtime{Node: node.Name, Start: since, End: c.now(), Reason: reason})
	c.deleteValidationPod(ctx, st.ValidationPod)
	if err := c.dropWindow(ctx, st.Reservation); err != nil { // a scheduled repair's (defer.go)
		c.events.Eventf(nodeRef(node.Name), corev1.EventTypeWarning, "ReservationLeft", "%v", err)
	}
	c.events.Eventf(nodeRef(node.Name), corev1.EventTypeNormal, "Returned", "validation passed; node back in service")
	return nil
}

func (c *controller) deleteValidationPod(ctx context.Context, name string) {
	if name == "" {
		return
	}
	err := c.client.CoreV1().Pods(c.cfg.Validation.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		c.events.Eventf(nodeRef(name), corev1.EventTypeWarning, "ValidationPodLeft", "delete %s: %v", name, err)
	}
}
