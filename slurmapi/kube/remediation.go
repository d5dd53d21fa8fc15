package kube

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// drainedOffFault: the remediation controller marked the pod with the fault it drains
// the node for and the pod is on its way out (evicted, or deleted past the drain
// timeout). The Eviction API marks every eviction EvictionByEvictionAPI, so without the
// mark a drain would read as a preemption. A marked pod that a PodDisruptionBudget still
// holds has not left yet.
func drainedOffFault(pod *corev1.Pod) bool {
	if _, ok := pod.Annotations[v1alpha1.NodeFaultAnnotation]; !ok {
		return false
	}
	if pod.DeletionTimestamp != nil {
		return true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
