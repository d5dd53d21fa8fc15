package webhook

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/resvcontroller"
)

// reservationView reads what judging a Reservation needs from the server's shared cache.
// It asks for the node, partition, pod and PodGroup informers on the first Reservation it
// judges, not at start: a follower replica, which serves only the webhook, then watches
// them only once an admin books a reservation through it, while the leader has them
// already (the scheduler and the reservation controller read the same ones).
type reservationView struct {
	informers crcache.Informers
	resvs     *reservationIndex
	now       func() time.Time
}

// world reads the cluster as the cache has it now. A cache that has not synced a kind
// yet makes the caller wait, at most as long as ctx (the API server's call) lasts.
func (v *reservationView) world(ctx context.Context) (*reservationWorld, error) {
	nodes, err := v.store(ctx, &corev1.Node{})
	if err != nil {
		return nil, err
	}
	parts, err := v.store(ctx, &v1alpha1.Partition{})
	if err != nil {
		return nil, err
	}
	pods, err := v.store(ctx, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	groups, err := v.store(ctx, &v1alpha1.PodGroup{})
	if err != nil {
		return nil, err
	}
	w := &reservationWorld{now: v.now(), parts: map[string]*v1alpha1.Partition{}, others: v.resvs.all(),
		groupOf: func(p *corev1.Pod) *v1alpha1.PodGroup {
			key := jobstate.PodGroupKey(p)
			if key == "" {
				return nil
			}
			obj, _, _ := groups.GetByKey(key)
			g, _ := obj.(*v1alpha1.PodGroup)
			return g
		}}
	for _, obj := range nodes.List() {
		if n, ok := obj.(*corev1.Node); ok {
			w.nodes = append(w.nodes, resvcontroller.Node{Name: n.Name, Labels: n.Labels, Unschedulable: n.Spec.Unschedulable})
		}
	}
	for _, obj := range parts.List() {
		if p, ok := obj.(*v1alpha1.Partition); ok {
			w.parts[p.Name] = p
		}
	}
	for _, obj := range pods.List() {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			w.pods = append(w.pods, p)
		}
	}
	return w, nil
}

// store is the shared informer's store of obj's kind, once synced.
func (v *reservationView) store(ctx context.Context, obj client.Object) (toolscache.Store, error) {
	inf, err := v.informers.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("%T informer: %w", obj, err)
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("the shared %T informer (%T) has no store to read", obj, inf)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), sii.HasSynced) {
		return nil, fmt.Errorf("the %T cache did not sync in time", obj)
	}
	return sii.GetStore(), nil
}
