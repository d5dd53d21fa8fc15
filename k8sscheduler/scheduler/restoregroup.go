package scheduler

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A manifest workload's PodGroup is what charges its pods to a queue. Someone with rights
// in the namespace could delete it while the pods run, and the pods would keep their GPUs
// outside any quota (nothing else recreates a Job's group once its pods exist). So a group
// deleted while any of its pods is bound and not terminating keeps being charged, from the
// copy last seen, and is written again; an Event on it says what happened. Deleting the
// workload (the Job, the pods) is how it ends: pods on their way out are not kept.
// A group of one falls back to the group its pod implies anyway, and a Slurm job's group
// owns its pods, so the garbage collector ends them with it.

// restoreRetry is how long a write of a deleted group waits before it is tried again.
const restoreRetry = 5 * time.Second

// ReasonPodGroupRestored is the Event reason on a PodGroup written again.
const ReasonPodGroupRestored = "PodGroupRestored"

// lostGroup is a deleted PodGroup whose pods still hold resources.
type lostGroup struct {
	pg      *v1alpha1.PodGroup // as it is to be written again: no version, UID or status
	retryAt time.Time          // no write before this (one is in flight, or failed)
}

// keepLost records, as g's PodGroup goes, a copy to write again when its pods still run.
// Called with the cache locked, before g.pg is dropped.
func (g *groupEntry) keepLost() {
	pg := g.pg
	if pg == nil || pg.Spec.Slurm != nil || len(pg.Spec.Members) > 0 || g.one != nil || !g.holdsResources() {
		g.lost = nil
		return
	}
	// The copy keeps the job's submit time: read from the new object's creation, it would
	// come after the pods' start, and the ledger would read the job as pending again.
	annotations := maps.Clone(pg.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.SubmitTimeAnnotation] = v1alpha1.FormatSubmitTime(pg.SubmitTime())
	g.lost = &lostGroup{pg: &v1alpha1.PodGroup{
		TypeMeta: pg.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: pg.Name, Namespace: pg.Namespace, Labels: pg.Labels,
			Annotations: annotations, OwnerReferences: pg.OwnerReferences},
		Spec:   *pg.Spec.DeepCopy(),
		Status: v1alpha1.PodGroupStatus{Phase: pg.Status.Phase, StartTime: pg.Status.StartTime},
	}}
}

// holdsResources reports whether one of the group's pods is bound and not on its way out.
func (g *groupEntry) holdsResources() bool {
	for _, p := range g.pods.all() {
		if p.node != "" && !p.terminating {
			return true
		}
	}
	return false
}

// restoreLocked returns the write of g's deleted PodGroup when it is due, and forgets the
// copy once nothing of the group holds resources. Called with the cache locked.
func (s *Scheduler) restoreLocked(g *groupEntry, now time.Time) func(context.Context) {
	lost := g.lost
	switch {
	case lost == nil: // every group, every cycle: no write
		return nil
	case g.pg != nil:
		g.lost = nil
		return nil
	}
	if !g.holdsResources() {
		g.lost, g.dirty = nil, true
		return nil
	}
	if now.Before(lost.retryAt) {
		return nil
	}
	lost.retryAt = now.Add(restoreRetry)
	pg, running := lost.pg.DeepCopy(), g.bound
	return func(ctx context.Context) {
		written, err := s.writeImplied(ctx, pg)
		if err != nil {
			klog.FromContext(ctx).Info("writing a deleted PodGroup again failed; retrying", "podGroup", pg.Namespace+"/"+pg.Name, "err", err)
			return
		}
		s.events.Event(written, corev1.EventTypeWarning, ReasonPodGroupRestored, fmt.Sprintf(
			"PodGroup was deleted while %d of its pods held resources; written again so queue %s stays charged for them. Delete the workload (its Job or pods) to end it",
			running, pg.Spec.Queue))
		want := statusKey{phase: v1alpha1.PodGroupRunning, sched: metav1.ConditionTrue, reason: "Scheduled",
			message: fmt.Sprintf("all %d pods of the gang are placed", max(pg.Spec.MinMember, 1))}
		s.groupStatusWork(written, want, statusKey{}, running)(ctx)
	}
}
