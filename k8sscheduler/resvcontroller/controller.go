// Package resvcontroller keeps each Reservation's status: the nodes it holds (a host list,
// a count chosen in a partition, or a partition's nodes), where it is in its window
// (Inactive, Active, Ended), the window itself as a DAILY or WEEKLY one moves on, and a
// Ready condition saying why its nodes cannot be resolved. It deletes a PURGE_COMP
// reservation once the last job that ran in it ends. The scheduler reads the status; the
// core enforces the window.
package resvcontroller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Component is the Events' source.
const Component = "sluice-reservations"

// Config is what the controller runs with.
type Config struct {
	// Informers is the server's shared cache (reservations, nodes, partitions, pods,
	// PodGroups); required.
	Informers crcache.Informers
	// SchedulerNames are Sluice's pods' schedulerNames: their pods are work (IsWork).
	SchedulerNames []string
	// Scheme knows v1alpha1 and core kinds, for the client and the Events.
	Scheme *runtime.Scheme
}

// Controller resolves reservations' status. Run it only while leader.
type Controller struct {
	cfg    Config
	crs    client.Client
	kube   kubernetes.Interface
	events record.EventRecorder
	queue  workqueue.TypedRateLimitingInterface[string]
	now    func() time.Time

	resvs, nodes, parts, pods, groups toolscache.Indexer
}

// New prepares a controller; nothing is read until Run.
func New(cfg Config, rc *rest.Config) (*Controller, error) {
	crs, err := client.New(rc, client.Options{Scheme: cfg.Scheme})
	if err != nil {
		return nil, fmt.Errorf("reservation controller: %w", err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("reservation controller: %w", err)
	}
	return &Controller{cfg: cfg, crs: crs, kube: kube, now: time.Now,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}, nil
}

// podsByNode and podsByGroup index the shared pod informer; groupsByReservation the
// PodGroups.
const (
	podsByNode          = "resv.nodeName"
	podsByGroup         = "resv.group"
	groupsByReservation = "resv.reservation"
)

// Run watches and reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	c.events = broadcaster.NewRecorder(c.cfg.Scheme, corev1.EventSource{Component: Component})

	var synced []toolscache.InformerSynced
	watch := func(obj client.Object, h toolscache.ResourceEventHandler, idx toolscache.Indexers) (toolscache.Indexer, error) {
		inf, err := c.cfg.Informers.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		sii, ok := inf.(toolscache.SharedIndexInformer)
		if !ok {
			return nil, fmt.Errorf("the shared %T informer (%T) has no store to read", obj, inf)
		}
		if idx != nil {
			if err := sii.AddIndexers(idx); err != nil {
				return nil, err
			}
		}
		reg, err := sii.AddEventHandler(h)
		if err != nil {
			return nil, err
		}
		synced = append(synced, reg.HasSynced)
		return sii.GetIndexer(), nil
	}
	var err error
	all := funcs(func(any) { c.enqueueAll() })
	if c.resvs, err = watch(&v1alpha1.Reservation{}, funcs(c.enqueueReservation), nil); err != nil {
		return fmt.Errorf("reservation controller: %w", err)
	}
	if c.nodes, err = watch(&corev1.Node{}, nodeFuncs(c.enqueueAll), nil); err != nil {
		return fmt.Errorf("reservation controller: %w", err)
	}
	if c.parts, err = watch(&v1alpha1.Partition{}, all, nil); err != nil {
		return fmt.Errorf("reservation controller: %w", err)
	}
	if c.groups, err = watch(&v1alpha1.PodGroup{}, funcs(c.enqueueGroup), toolscache.Indexers{groupsByReservation: indexGroupReservation}); err != nil {
		return fmt.Errorf("reservation controller: %w", err)
	}
	if c.pods, err = watch(&corev1.Pod{}, funcs(c.enqueuePod), toolscache.Indexers{podsByNode: indexPodNode, podsByGroup: indexPodGroup}); err != nil {
		return fmt.Errorf("reservation controller: %w", err)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for c.next(ctx) {
	}
	return nil
}

func (c *Controller) next(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	after, err := c.reconcile(ctx, name)
	switch {
	case err != nil && ctx.Err() == nil:
		klog.FromContext(ctx).Error(err, "reservation: retrying", "reservation", name)
		c.queue.AddRateLimited(name)
	case after > 0:
		c.queue.Forget(name)
		c.queue.AddAfter(name, after)
	default:
		c.queue.Forget(name)
	}
	return true
}

// funcs calls f with every added, updated or deleted object (a lost delete unwrapped).
func funcs(f func(any)) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    f,
		UpdateFunc: func(_, obj any) { f(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			f(obj)
		},
	}
}

// nodeFuncs calls f when a node comes or goes, or its labels or schedulability change
// (not on the kubelet's heartbeats).
func nodeFuncs(f func()) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { f() },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := cur.(*corev1.Node)
			if !ok1 || !ok2 || o.Spec.Unschedulable != n.Spec.Unschedulable || fmt.Sprint(o.Labels) != fmt.Sprint(n.Labels) {
				f()
			}
		},
		DeleteFunc: func(any) { f() },
	}
}

func (c *Controller) enqueueReservation(obj any) {
	if r, ok := obj.(*v1alpha1.Reservation); ok {
		c.queue.Add(r.Name)
	}
}

// enqueueAll reconciles every reservation: a node or partition change may resolve or
// change their nodes.
func (c *Controller) enqueueAll() {
	for _, name := range c.resvs.ListKeys() {
		c.queue.Add(name)
	}
}

// enqueueGroup and enqueuePod wake the reservation a job runs in, for PURGE_COMP.
func (c *Controller) enqueueGroup(obj any) {
	if g, ok := obj.(*v1alpha1.PodGroup); ok {
		if r := v1alpha1.ReservationOf(g.Labels, g.Annotations); r != "" {
			c.queue.Add(r)
		}
	}
}

func (c *Controller) enqueuePod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if r := jobstate.ReservationOfPod(p, c.groupOf(p)); r != "" {
		c.queue.Add(r)
	}
}

// groupOf is the pod's written PodGroup, nil when none.
func (c *Controller) groupOf(p *corev1.Pod) *v1alpha1.PodGroup {
	key := jobstate.PodGroupKey(p)
	if key == "" {
		return nil
	}
	obj, ok, _ := c.groups.GetByKey(key)
	if !ok {
		return nil
	}
	g, _ := obj.(*v1alpha1.PodGroup)
	return g
}

func indexPodNode(obj any) ([]string, error) {
	if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		return []string{p.Spec.NodeName}, nil
	}
	return nil, nil
}

// indexPodGroup files a pod under its group's key, and a group of one under its own
// reservation too (it has no PodGroup to be found through).
func indexPodGroup(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	var keys []string
	if k := jobstate.PodGroupKey(p); k != "" {
		keys = append(keys, k)
	}
	if jobstate.GroupOfOne(p) {
		if r := v1alpha1.ReservationOf(p.Labels, p.Annotations); r != "" {
			keys = append(keys, "reservation:"+r)
		}
	}
	return keys, nil
}

func indexGroupReservation(obj any) ([]string, error) {
	if g, ok := obj.(*v1alpha1.PodGroup); ok {
		if r := v1alpha1.ReservationOf(g.Labels, g.Annotations); r != "" {
			return []string{r}, nil
		}
	}
	return nil, nil
}

// get is the reservation under name from the cache, nil when gone.
func (c *Controller) get(name string) *v1alpha1.Reservation {
	obj, ok, _ := c.resvs.GetByKey(name)
	if !ok {
		return nil
	}
	r, _ := obj.(*v1alpha1.Reservation)
	return r
}

// deleteReservation deletes r, guarded by its UID so a namesake created meanwhile stays.
func (c *Controller) deleteReservation(ctx context.Context, r *v1alpha1.Reservation) error {
	err := c.crs.Delete(ctx, r, client.Preconditions{UID: &r.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
