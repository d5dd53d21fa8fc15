package controller

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/health"
)

// ValidationLabel marks validation pods (value: the node they validate); a drain leaves
// them alone.
const ValidationLabel = v1alpha1.ValidationLabel

// drain evicts the node's pods (only those on the given GPUs when gpus is non-empty)
// through the Eviction API, so PodDisruptionBudgets are respected. Each pod is first
// marked with the fault (health.NodeFaultAnnotation), so whoever ends its job (the Slurm
// lifecycle, the ledger) knows it was lost to hardware, not preempted. Past deadline,
// pods still refused are deleted: they sit on failing hardware and would not make
// progress. It returns how many pods are still on their way out.
func (c *controller) drain(ctx context.Context, node string, gpus []health.GPUInfo, reason string, deadline time.Time) (int, error) {
	objs, err := c.pods.ByIndex(podsByNode, node)
	if err != nil {
		return 0, err
	}
	remaining := 0
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
		if !mustLeave(pod, gpus) {
			continue
		}
		if pod.DeletionTimestamp != nil {
			// On its way out, unless it is stuck there (a dead kubelet, a finalizer nobody
			// removes): past the terminating timeout the drain stops waiting for it.
			if c.stuckTerminating(ctx, node, pod) {
				continue
			}
			remaining++
			continue
		}
		remaining++
		err := c.markFaulty(ctx, pod, reason)
		if err == nil {
			err = c.client.CoreV1().Pods(pod.Namespace).EvictV1(ctx, &policyv1.Eviction{
				ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			})
		}
		switch {
		case err == nil:
		case apierrors.IsNotFound(err):
			remaining--
		case apierrors.IsTooManyRequests(err) && c.now().After(deadline):
			// The PodDisruptionBudget still refuses after the drain timeout.
			if err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return remaining, err
			}
			c.events.Eventf(nodeRef(node), corev1.EventTypeWarning, "DrainTimeout",
				"pod %s/%s deleted: its disruption budget refused eviction past the drain timeout", pod.Namespace, pod.Name)
		case apierrors.IsTooManyRequests(err):
			// Refused by a PodDisruptionBudget: try again on the next pass.
		default:
			return remaining, err
		}
	}
	return remaining, nil
}

// stuckTerminating reports whether a deleted pod is still there TerminatingTimeout after
// its deletion time (which already includes its grace period). Such a pod no longer holds
// the drain up: it is force-deleted (grace period 0, as `kubectl delete --force` does:
// the node is out for repair, so nothing of it keeps running for long) and a DrainStuck
// Event names it. A pod kept by a finalizer stays listed until the finalizer goes, but the
// node moves on.
func (c *controller) stuckTerminating(ctx context.Context, node string, pod *corev1.Pod) bool {
	if c.now().Before(pod.DeletionTimestamp.Add(c.cfg.TerminatingTimeout)) {
		return false
	}
	if g := pod.DeletionGracePeriodSeconds; g != nil && *g == 0 {
		return true // already forced
	}
	force := int64(0)
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &force})
	if err != nil && !apierrors.IsNotFound(err) {
		c.events.Eventf(nodeRef(node), corev1.EventTypeWarning, "DrainStuck", "pod %s/%s terminating since %s: force delete: %v",
			pod.Namespace, pod.Name, pod.DeletionTimestamp.Format(time.RFC3339), err)
		return true
	}
	c.events.Eventf(nodeRef(node), corev1.EventTypeWarning, "DrainStuck",
		"pod %s/%s still terminating %s after its deletion time; force-deleted, the drain goes on without it",
		pod.Namespace, pod.Name, c.cfg.TerminatingTimeout)
	return true
}

// markFaulty sets the pod's NodeFaultAnnotation to reason, unless the cache already
// shows it (a pod a budget keeps refusing is marked once).
func (c *controller) markFaulty(ctx context.Context, pod *corev1.Pod, reason string) error {
	if pod.Annotations[health.NodeFaultAnnotation] == reason {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{health.NodeFaultAnnotation: reason}}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// mustLeave: every running pod leaves a quarantined node except DaemonSet pods (they
// would come straight back and hold no GPU work), static pods and our validation pod;
// for a GPU-local drain only pods assigned to one of the faulty GPUs leave.
func mustLeave(pod *corev1.Pod, gpus []health.GPUInfo) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if _, ok := pod.Labels[ValidationLabel]; ok {
		return false
	}
	if _, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return false
	}
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return false
		}
	}
	if len(gpus) == 0 {
		return true
	}
	a, ok, err := v1alpha1.GPUAssignmentOf(pod.Annotations)
	// A pod whose assignment cannot be read may be on the faulty GPU: evict it to be safe.
	return err != nil || (ok && health.AssignmentUses(a, gpus))
}
