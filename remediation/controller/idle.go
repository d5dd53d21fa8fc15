package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/health"
)

// idleLoop validates idle nodes on schedule until ctx ends. It runs in the controller's
// process beside the node worker; each sweep looks at every node once.
func (c *controller) idleLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.IdleValidation.Check)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.sweepIdle(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "remediation: idle validation")
		}
	}
}

// sweepIdle follows the running idle validations, then starts the ones due, the longest
// unvalidated nodes first, up to each partition's MaxNodes at once.
func (c *controller) sweepIdle(ctx context.Context) error {
	all, err := c.nodes.List(everything)
	if err != nil {
		return err
	}
	now := c.now()
	running := map[string]int{}
	type candidate struct {
		node *corev1.Node
		last time.Time
	}
	due := map[string][]candidate{}
	for _, n := range all {
		part := n.Labels[c.cfg.PartitionLabel]
		run, _, _ := health.ParseLastValidation(n.Annotations) // unreadable: validated anew
		if run.Kind == health.ValidationIdle && run.Result == health.ValidationRunning {
			if still, err := c.followIdle(ctx, n, part, run); err != nil {
				klog.FromContext(ctx).Error(err, "remediation: idle validation", "node", n.Name)
			} else if still {
				running[part]++
			}
			continue
		}
		sched := c.cfg.IdleValidation.schedule(part)
		if sched.Interval < 0 || !c.idle(n) {
			continue
		}
		last := run.FinishedAt // the interval runs from the end of the last validation
		if last.IsZero() {
			last = c.firstIdle(n.Name, now)
		}
		if now.Sub(last) >= sched.Interval {
			due[part] = append(due[part], candidate{n, last})
		}
	}
	parts := make([]string, 0, len(due))
	for p := range due {
		parts = append(parts, p)
	}
	sort.Strings(parts)
	for _, part := range parts {
		list := due[part]
		sort.Slice(list, func(i, j int) bool {
			if !list[i].last.Equal(list[j].last) {
				return list[i].last.Before(list[j].last)
			}
			return list[i].node.Name < list[j].node.Name
		})
		for _, cand := range list {
			if running[part] >= c.cfg.IdleValidation.schedule(part).MaxNodes {
				break
			}
			if err := c.startIdle(ctx, cand.node, part); err != nil {
				klog.FromContext(ctx).Error(err, "remediation: idle validation", "node", cand.node.Name)
				continue
			}
			running[part]++
		}
	}
	return nil
}

// firstIdle is when this controller first found the node unvalidated: a node never
// validated is due one interval later, so a restart does not validate every node at once.
func (c *controller) firstIdle(name string, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.firstSeen[name]
	if !ok {
		c.firstSeen[name] = now
		t = now
	}
	return t
}

// idle: in service (no remediation, no quarantine, not cordoned, no fault, no repair
// open) and running nothing a validation would disturb.
func (c *controller) idle(n *corev1.Node) bool {
	if n.Spec.Unschedulable || hasQuarantineTaint(n) || len(activeFaults(n)) > 0 {
		return false
	}
	if st, err := health.ParseRemediation(n.Annotations); err != nil || st.Phase != "" {
		return false
	}
	if _, open := n.Annotations[health.RepairAnnotation]; open {
		return false
	}
	pods, err := c.pods.ByIndex(podsByNode, n.Name)
	if err != nil {
		return false
	}
	for _, obj := range pods {
		if p := obj.(*corev1.Pod); mustLeave(p, nil) || isValidation(p) && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return false
		}
	}
	return true
}

func isValidation(p *corev1.Pod) bool {
	_, ok := p.Labels[ValidationLabel]
	return ok
}

func hasQuarantineTaint(n *corev1.Node) bool {
	t := quarantineTaint()
	for _, have := range n.Spec.Taints {
		if have.MatchTaint(&t) {
			return true
		}
	}
	return false
}

// startIdle starts the validation pod on an idle node. It carries the idle-validation
// label, so the scheduler counts the node free and deletes the pod the moment a job is
// placed there.
func (c *controller) startIdle(ctx context.Context, n *corev1.Node, partition string) error {
	now := c.now()
	pod := c.validationPod(n, fmt.Sprintf("sluice-idle-validate-%s-%d", n.Name, now.Unix()))
	pod.Labels[v1alpha1.IdleValidationLabel] = partition
	// Give the node back quickly when a job wants it.
	grace := int64(5)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	if _, err := c.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create validation pod: %w", err)
	}
	run := health.ValidationRun{Kind: health.ValidationIdle, Pod: pod.Name, StartedAt: now, Result: health.ValidationRunning}
	if err := c.updateNode(ctx, n.Name, func(n *corev1.Node) { setAnnotation(n, health.LastValidationAnnotation, run.Format()) }); err != nil {
		c.deleteValidationPod(ctx, pod.Name)
		return err
	}
	c.events.Eventf(nodeRef(n.Name), corev1.EventTypeNormal, "IdleValidationStarted", "pod %s/%s", pod.Namespace, pod.Name)
	return nil
}

// followIdle looks at a running idle validation and records how it ended: passed,
// failed (the node is then marked ValidationFailed, which quarantines it through the
// circuit breaker as any fault does), preempted (its pod removed before it finished: a
// job took the node), or overdue (failed). It reports whether it still runs.
func (c *controller) followIdle(ctx context.Context, n *corev1.Node, partition string, run health.ValidationRun) (bool, error) {
	pod, err := c.client.CoreV1().Pods(c.cfg.Validation.Namespace).Get(ctx, run.Pod, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return true, err
	}
	now := c.now()
	switch {
	case apierrors.IsNotFound(err) || pod.DeletionTimestamp != nil:
		run.Result, run.Detail = health.ValidationPreempted, "its pod was removed before it finished (a job took the node)"
	case pod.Status.Phase == corev1.PodSucceeded:
		run.Result = health.ValidationPassed
	case pod.Status.Phase == corev1.PodFailed:
		run.Result, run.Detail = health.ValidationFailedRun, whyFailed(pod)
	case now.Sub(run.StartedAt) > c.cfg.Validation.Timeout:
		run.Result, run.Detail = health.ValidationFailedRun, "did not finish within "+c.cfg.Validation.Timeout.String()
	default:
		return true, nil
	}
	run.FinishedAt = now
	return false, c.finishValidation(ctx, n.Name, partition, run)
}

// finishValidation records a finished run: the node's annotation, its ValidationFailed
// condition (a preempted run changes neither the condition nor what is known of the node),
// the history, an Event; then the pod goes.
func (c *controller) finishValidation(ctx context.Context, node, partition string, run health.ValidationRun) error {
	// The condition first: the annotation marks the run finished, after which it is not
	// looked at again.
	switch run.Result {
	case health.ValidationPassed:
		if err := c.setValidationCondition(ctx, node, corev1.ConditionFalse, health.ReasonValidationPassed, run.Summary(run.FinishedAt)); err != nil {
			return err
		}
	case health.ValidationFailedRun:
		if err := c.setValidationCondition(ctx, node, corev1.ConditionTrue, health.ActionHardwareRepair.Reason(),
			"validation failed: "+run.Detail+". Recommended action: "+health.ActionHardwareRepair.Advice()+"."); err != nil {
			return err
		}
	}
	if err := c.updateNode(ctx, node, func(n *corev1.Node) { setAnnotation(n, health.LastValidationAnnotation, run.Format()) }); err != nil {
		return err
	}
	if c.cfg.History != nil {
		if err := c.cfg.History.RecordValidation(ctx, node, partition, run); err != nil {
			c.events.Eventf(nodeRef(node), corev1.EventTypeWarning, "ValidationNotRecorded", "%v", err)
		}
	}
	kind := corev1.EventTypeNormal
	if run.Result == health.ValidationFailedRun {
		kind = corev1.EventTypeWarning
	}
	c.events.Eventf(nodeRef(node), kind, "Validation"+run.Result, "%s", run.Summary(run.FinishedAt))
	if run.Kind == health.ValidationIdle {
		c.deleteValidationPod(ctx, run.Pod)
	}
	return nil
}

// whyFailed says what failed: the container's exit code, reason and message.
func whyFailed(pod *corev1.Pod) string {
	for _, s := range pod.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			why := fmt.Sprintf("%s exited %d", s.Name, t.ExitCode)
			if t.Reason != "" {
				why += " (" + t.Reason + ")"
			}
			if t.Message != "" {
				why += ": " + t.Message
			}
			return why
		}
	}
	if pod.Status.Message != "" {
		return pod.Status.Message
	}
	return "validation pod failed"
}

// setValidationCondition writes the node's ValidationFailed condition (a strategic merge
// by type, leaving every other condition alone).
func (c *controller) setValidationCondition(ctx context.Context, node string, status corev1.ConditionStatus, reason, msg string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewTime(c.now())
		want := corev1.NodeCondition{Type: corev1.NodeConditionType(health.ValidationFailed), Status: status,
			Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		merged := health.MergeConditions(n.Status.Conditions, []corev1.NodeCondition{want})
		var ours []corev1.NodeCondition
		for _, cond := range merged {
			if cond.Type == want.Type {
				ours = append(ours, cond)
			}
		}
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": ours}})
		if err != nil {
			return err
		}
		_, err = c.client.CoreV1().Nodes().PatchStatus(ctx, node, patch)
		return err
	})
}
