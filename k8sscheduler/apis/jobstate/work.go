package jobstate

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// When a job's work on a node ends, and which reservation it runs in, as reservations'
// readers (the reservation controller, admission, remediation's deferred repairs) all
// need them read the same way.

// IsWork reports whether a pod is a job's task that holds its node: bound, not ended,
// a pod of Sluice's schedulers or one asking for GPUs. DaemonSets and other system
// pods stay on reserved nodes and do not make them busy; GPU reservation pods stand
// for the shares they hold, which are counted themselves.
func IsWork(p *corev1.Pod, schedulerNames []string) bool {
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if _, ok := p.Labels[v1alpha1.GPUReservationLabel]; ok {
		return false
	}
	if slices.Contains(schedulerNames, p.Spec.SchedulerName) {
		return true
	}
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[v1alpha1.GPUResource]; ok && !q.IsZero() {
			return true
		}
	}
	return false
}

// Forever is the end of work that has no time limit.
var Forever = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// WorkEnds is when a running pod will have ended by its time limit: its start plus its
// activeDeadlineSeconds, or its Slurm job's time limit (group, nil when none); Forever
// when it has none.
func WorkEnds(p *corev1.Pod, group *v1alpha1.PodGroup) time.Time {
	start := p.CreationTimestamp.Time
	if p.Status.StartTime != nil {
		start = p.Status.StartTime.Time
	}
	limit := time.Duration(0)
	if d := p.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
		limit = time.Duration(*d) * time.Second
	}
	if group != nil && group.Spec.Slurm != nil && group.Spec.Slurm.TimeLimit != nil {
		if tl := group.Spec.Slurm.TimeLimit.Duration; tl > 0 && (limit == 0 || tl < limit) {
			limit = tl
		}
	}
	if limit == 0 {
		return Forever
	}
	return start.Add(limit)
}

// ReservationOfPod is the reservation a pod's job runs in: its PodGroup's (group, nil
// when it has none written) or, for a group of one or a pod of no group, its own.
func ReservationOfPod(p *corev1.Pod, group *v1alpha1.PodGroup) string {
	if group != nil {
		return v1alpha1.ReservationOf(group.Labels, group.Annotations)
	}
	if GroupOfOne(p) || PodGroupKey(p) == "" {
		return v1alpha1.ReservationOf(p.Labels, p.Annotations)
	}
	return ""
}
