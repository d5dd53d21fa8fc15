package resvcontroller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// edgeSlack is how long after a window's edge the reservation is looked at again, so the
// clock has passed the edge when it is.
const edgeSlack = 50 * time.Millisecond

// reconcile brings one reservation's status up to date and says when to look again (its
// next window edge).
func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	r := c.get(name)
	if r == nil || r.DeletionTimestamp != nil {
		return 0, nil
	}
	now := c.now()
	inUse := c.inUse(r)
	if r.HasFlag(v1alpha1.ReservationPurgeComp) && !inUse && meta.IsStatusConditionTrue(r.Status.Conditions, ConditionUsed) {
		klog.FromContext(ctx).Info("reservation: purged, its last job ended", "reservation", name)
		c.events.Eventf(r, corev1.EventTypeNormal, eventPurged, "deleted (PURGE_COMP): the last job that ran in it ended")
		return 0, c.deleteReservation(ctx, r)
	}
	want := desired(r, now, c.resolve(r, now), inUse)
	c.announce(r, want)
	if !equality.Semantic.DeepEqual(r.Status, want.Status) {
		err := c.crs.Status().Patch(ctx, want, client.MergeFromWithOptions(r, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("status of reservation %s: %w", name, err)
		}
	}
	if edge := want.NextEdge(now); !edge.IsZero() {
		return edge.Sub(now) + edgeSlack, nil
	}
	return 0, nil
}

// desired is r with the status it should have at now, given its nodes' resolution and
// whether a job runs in it.
func desired(r *v1alpha1.Reservation, now time.Time, res Resolution, inUse bool) *v1alpha1.Reservation {
	want := r.DeepCopy()
	if specChanged(r) {
		// An edited spec starts the window again from the spec.
		want.Status.StartTime, want.Status.EndTime = nil, nil
	}
	start, end := want.WindowAt(now)
	want.Status.StartTime, want.Status.EndTime = &metav1.Time{Time: start}, &metav1.Time{Time: end}
	want.Status.State = State(want, now)
	want.Status.Nodes = res.Nodes
	ready := metav1.ConditionFalse
	if res.Ready {
		ready = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&want.Status.Conditions, metav1.Condition{Type: ConditionReady, Status: ready,
		Reason: res.Reason, Message: res.Message, ObservedGeneration: r.Generation})
	if inUse {
		meta.SetStatusCondition(&want.Status.Conditions, metav1.Condition{Type: ConditionUsed, Status: metav1.ConditionTrue,
			Reason: ReasonJobRan, Message: "a job has run in it", ObservedGeneration: r.Generation})
	}
	return want
}

// specChanged reports whether r's spec changed since its status was last written (the
// Ready condition records the generation it was written for).
func specChanged(r *v1alpha1.Reservation) bool {
	cond := meta.FindStatusCondition(r.Status.Conditions, ConditionReady)
	return cond != nil && cond.ObservedGeneration != r.Generation
}

// announce records Events for what changed: the window opened or closed, the nodes
// were resolved or cannot be.
func (c *Controller) announce(r, want *v1alpha1.Reservation) {
	was, is := r.Status.State, want.Status.State
	switch {
	case was != is && is == v1alpha1.ReservationActive:
		c.events.Eventf(r, corev1.EventTypeNormal, eventStarted, "window %s to %s began on %s", want.Status.StartTime.UTC().Format(time.RFC3339),
			want.Status.EndTime.UTC().Format(time.RFC3339), strings.Join(want.Status.Nodes, ","))
	case was == v1alpha1.ReservationActive && is != v1alpha1.ReservationActive:
		c.events.Eventf(r, corev1.EventTypeNormal, eventEnded, "window ended; its nodes are free")
	}
	before := meta.FindStatusCondition(r.Status.Conditions, ConditionReady)
	after := meta.FindStatusCondition(want.Status.Conditions, ConditionReady)
	if before != nil && before.Status == after.Status && before.Message == after.Message {
		return
	}
	if after.Status == metav1.ConditionTrue {
		c.events.Eventf(r, corev1.EventTypeNormal, eventNodesResolved, "holds %s", strings.Join(want.Status.Nodes, ","))
	} else {
		c.events.Eventf(r, corev1.EventTypeWarning, eventNodesNotResolved, "%s: %s", after.Reason, after.Message)
	}
}

// resolve works out r's nodes from the cache.
func (c *Controller) resolve(r *v1alpha1.Reservation, now time.Time) Resolution {
	parts := map[string]*v1alpha1.Partition{}
	for _, obj := range c.parts.List() {
		if p, ok := obj.(*v1alpha1.Partition); ok {
			parts[p.Name] = p
		}
	}
	choosing := r.Spec.NodeCount != nil && len(r.Spec.Nodes) == 0
	if choosing && len(r.Status.Nodes) > 0 && !c.stillFits(r, parts) {
		r = r.DeepCopy()
		r.Status.Nodes = nil // the count or partition changed: choose again
	}
	nodes := c.nodeList(choosing && len(r.Status.Nodes) == 0)
	return Resolve(r, nodes, parts, c.taken(r, now))
}

// stillFits reports whether r's chosen nodes still answer its spec: as many as it wants,
// in its partition unless ANY_NODES.
func (c *Controller) stillFits(r *v1alpha1.Reservation, parts map[string]*v1alpha1.Partition) bool {
	if len(r.Status.Nodes) != int(*r.Spec.NodeCount) {
		return false
	}
	if r.HasFlag(v1alpha1.ReservationAnyNodes) {
		return true
	}
	for _, name := range r.Status.Nodes {
		obj, ok, _ := c.nodes.GetByKey(name)
		n, _ := obj.(*corev1.Node)
		if !ok || n == nil || !InPartition(n.Labels, r.Spec.Partition, parts) {
			return false
		}
	}
	return true
}

// nodeList is every node; with busy, when its work ends too (only choosing nodes reads it).
func (c *Controller) nodeList(busy bool) []Node {
	objs := c.nodes.List()
	out := make([]Node, 0, len(objs))
	for _, obj := range objs {
		n, ok := obj.(*corev1.Node)
		if !ok {
			continue
		}
		node := Node{Name: n.Name, Labels: n.Labels, Unschedulable: n.Spec.Unschedulable}
		if busy {
			pods, _ := c.pods.ByIndex(podsByNode, n.Name)
			for _, obj := range pods {
				if p, ok := obj.(*corev1.Pod); ok && jobstate.IsWork(p, c.cfg.SchedulerNames) {
					if end := jobstate.WorkEnds(p, c.groupOf(p)); end.After(node.BusyUntil) {
						node.BusyUntil = end
					}
				}
			}
		}
		out = append(out, node)
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// taken are the nodes other reservations hold in windows that meet r's.
func (c *Controller) taken(r *v1alpha1.Reservation, now time.Time) map[string]bool {
	taken := map[string]bool{}
	for _, obj := range c.resvs.List() {
		o, ok := obj.(*v1alpha1.Reservation)
		if !ok || o.Name == r.Name || o.DeletionTimestamp != nil || !WindowsOverlap(r, o, now) {
			continue
		}
		for _, n := range HeldNodes(o) {
			taken[n] = true
		}
	}
	return taken
}

// HeldNodes are the nodes a reservation holds: its resolved ones, else those it names.
func HeldNodes(r *v1alpha1.Reservation) []string {
	if len(r.Status.Nodes) > 0 {
		return r.Status.Nodes
	}
	return r.Spec.Nodes
}

// inUse reports whether a job runs in r now: a task of a PodGroup naming it, or a group
// of one naming it, is bound and has not ended.
func (c *Controller) inUse(r *v1alpha1.Reservation) bool {
	keys := []string{"reservation:" + r.Name}
	groups, _ := c.groups.ByIndex(groupsByReservation, r.Name)
	for _, obj := range groups {
		if g, ok := obj.(*v1alpha1.PodGroup); ok {
			keys = append(keys, g.Namespace+"/"+g.Name)
		}
	}
	for _, k := range keys {
		pods, _ := c.pods.ByIndex(podsByGroup, k)
		for _, obj := range pods {
			if p, ok := obj.(*corev1.Pod); ok && jobstate.IsWork(p, c.cfg.SchedulerNames) {
				return true
			}
		}
	}
	return false
}
