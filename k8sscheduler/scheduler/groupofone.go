package scheduler

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// materializeWork writes a group of one's PodGroup (v1alpha1.ImpliedPodGroup) and then the
// status want, the first thing it has to say that its pod cannot: why it waits, or that it
// was evicted. then (an eviction) runs after, whether or not the write succeeded: the core
// decided it, and a failed write is retried by the next cycle's status pass. Called with
// the cache locked; the work runs without it.
func (s *Scheduler) materializeWork(g *groupEntry, want, prev statusKey, then func(context.Context)) func(context.Context) {
	pg := g.podGroup().DeepCopy()
	namesake := g.pg // a PodGroup of the same name owned by an earlier pod, or nil
	bound := g.bound
	return func(ctx context.Context) {
		written, err := s.writeImplied(ctx, pg, namesake)
		if err != nil {
			klog.InfoS("writing a group of one's PodGroup failed; retrying next cycle", "podGroup", pg.Namespace+"/"+pg.Name, "err", err)
			s.unwrite(pg.Namespace+"/"+pg.Name, prev)
		} else {
			s.groupStatusWork(written, want, statusKey{}, bound)(ctx)
		}
		if then != nil {
			then(ctx)
		}
	}
}

// writeImplied creates pg, first deleting namesake (by UID, so nothing newer goes) when a
// bare pod of the same name left it behind. A PodGroup already there that is this pod's
// (another replica wrote it) is used as it is.
func (s *Scheduler) writeImplied(ctx context.Context, pg, namesake *v1alpha1.PodGroup) (*v1alpha1.PodGroup, error) {
	if namesake != nil {
		uid := namesake.UID
		err := s.crs.Delete(ctx, namesake.DeepCopy(), client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("removing PodGroup %s/%s left by an earlier pod: %w", namesake.Namespace, namesake.Name, err)
		}
	}
	err := s.crs.Create(ctx, pg)
	if apierrors.IsAlreadyExists(err) {
		have := &v1alpha1.PodGroup{}
		if err := s.crs.Get(ctx, client.ObjectKeyFromObject(pg), have); err != nil {
			return nil, err
		}
		if !ownedBy(have, pg.OwnerReferences[0].UID) {
			return nil, fmt.Errorf("PodGroup %s/%s belongs to another pod", pg.Namespace, pg.Name)
		}
		return have, nil
	}
	return pg, err
}
