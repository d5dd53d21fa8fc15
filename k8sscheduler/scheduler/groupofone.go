package scheduler

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// materializeWork writes a group of one's PodGroup (jobstate.ImpliedPodGroup) and then the
// status want, the first thing it has to say that its pod cannot: why it waits, or that it
// was evicted. then (an eviction) runs after, whether or not the write succeeded: the core
// decided it, and a failed write is retried by the next cycle's status pass. Called with
// the cache locked; the work runs without it.
func (s *Scheduler) materializeWork(g *groupEntry, want, prev statusKey, then func(context.Context)) func(context.Context) {
	pg := g.podGroup().DeepCopy()
	bound := g.bound
	return func(ctx context.Context) {
		written, err := s.writeImplied(ctx, pg)
		if err != nil {
			klog.FromContext(ctx).Info("writing a group of one's PodGroup failed; retrying next cycle", "podGroup", pg.Namespace+"/"+pg.Name, "err", err)
			s.unwrite(pg.Namespace+"/"+pg.Name, prev)
		} else {
			s.groupStatusWork(written, want, statusKey{}, bound)(ctx)
		}
		if then != nil {
			then(ctx)
		}
	}
}

// writeImplied creates pg. A PodGroup already there is this pod's (another replica wrote
// it; group names are never shared) and is used as it is.
func (s *Scheduler) writeImplied(ctx context.Context, pg *v1alpha1.PodGroup) (*v1alpha1.PodGroup, error) {
	err := s.crs.Create(ctx, pg)
	if apierrors.IsAlreadyExists(err) {
		have := &v1alpha1.PodGroup{}
		if err := s.crs.Get(ctx, client.ObjectKeyFromObject(pg), have); err != nil {
			return nil, err
		}
		return have, nil
	}
	return pg, err
}
