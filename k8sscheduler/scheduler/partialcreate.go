package scheduler

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A Slurm job's Running status is written as its pods are created, one create each; a
// leader that dies between them (etcd paused past its Lease) leaves the job Running with
// some of its pods. A gang runs whole or not at all, and what the missing pods needed is
// not recorded anywhere (their nodes, and the node list the made pods were given), so the
// next leader does not finish the create: it removes the pods that were made, running or
// finished, and then places the job again as one whose pods were never created
// (neverCreated). Before, such a job stayed RUNNING for good with the pods it had.

// noteFinished records a finished pod of the group by name: the cache drops finished
// pods, but a partly created job's finished pod still counts as made, and must be removed
// before the job's pods are created again under the same names.
func (g *groupEntry) noteFinished(name string) {
	if g.finished == nil {
		g.finished = map[string]bool{}
	}
	g.finished[name] = true
}

// madePods are the names of the group's pods that exist or were seen finished.
func (g *groupEntry) madePods() []string {
	names := make([]string, 0, g.pods.len()+len(g.finished))
	for name := range g.pods.names() {
		if !g.finished[name] {
			names = append(names, name)
		}
	}
	for name := range g.finished {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// partlyCreated reports whether a Slurm job says Running with some but not all of its
// pods made, none of them by this leader and none in flight: its creator died mid-create.
// A job whose pods all ran and some were deleted is the lifecycle's (it ends or requeues
// it); this leader cannot tell it from a partial create only when a finished pod was also
// deleted before it started, which the lifecycle does only as a job ends.
func (g *groupEntry) partlyCreated() bool {
	if !g.memberBased() || g.created || len(g.assumed) > 0 || g.strayed || g.pg.DeletionTimestamp != nil ||
		g.pg.Status.Phase != v1alpha1.PodGroupRunning {
		return false
	}
	var want int
	for _, m := range g.pg.Spec.Members {
		want += int(m.Count)
	}
	made := len(g.madePods())
	return made > 0 && made < want
}

// strayPodsLocked returns the removal of a partly created job's pods, once; the job is
// placed again when they are gone.
func (s *Scheduler) strayPodsLocked(g *groupEntry) func(context.Context) {
	if !g.partlyCreated() {
		return nil
	}
	g.strayed, g.dirty = true, true
	pg, names := g.pg, g.madePods()
	s.log.Info("a Slurm job's pods were only partly created by a leader that went away; removing them to place it again",
		"podGroup", g.key, "made", names, "members", g.pg.Spec.MinMember)
	return func(ctx context.Context) {
		zero := int64(0)
		for _, name := range names {
			err := s.kube.CoreV1().Pods(pg.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			if err != nil && !apierrors.IsNotFound(err) {
				klog.FromContext(ctx).Error(err, "removing a partly created Slurm job's pod; retrying next cycle", "pod", pg.Namespace+"/"+name)
				s.cache.mu.Lock()
				g.strayed, g.dirty = false, true
				s.cache.mu.Unlock()
				s.cache.poke()
				return
			}
		}
		s.cache.mu.Lock()
		g.finished = nil // removed: the job's next pods reuse the names
		g.dirty = true
		s.cache.mu.Unlock()
		s.events.Eventf(pg, corev1.EventTypeWarning, "PartlyCreated",
			"removed %d pods of a create a previous leader did not finish; the job is placed again", len(names))
		s.cache.poke()
	}
}
