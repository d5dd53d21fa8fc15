package webhook

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/resvcontroller"
)

// Slurm's words for what it refuses a reservation for (slurm_errno.c), so an admin reads
// the same reason from kubectl as from scontrol.
const (
	slurmInvalidTime      = "Invalid time specified"
	slurmInvalidPartition = "Invalid partition name specified"
	slurmInvalidNodeName  = "Invalid node name specified"
	slurmInvalidNodeCount = "Node count specification invalid"
	slurmOverlap          = "Reservation request overlaps with another reservation"
	slurmNodesBusy        = "Requested nodes are busy"
)

// reservationWorld is what admission reads of the cluster to judge a Reservation.
type reservationWorld struct {
	now    time.Time
	nodes  []resvcontroller.Node // BusyUntil unset: busy is judged per pod
	parts  map[string]*v1alpha1.Partition
	others []*v1alpha1.Reservation // every Reservation but the one judged
	pods   []*corev1.Pod           // bound pods
	// groupOf is a pod's written PodGroup, nil when none.
	groupOf func(*corev1.Pod) *v1alpha1.PodGroup
}

// refusal is why a Reservation is refused: the HTTP status and the message.
type refusal struct {
	code int32
	why  string
}

// judgeReservation says why r (old: what it was, nil on create) may not be created as it
// is, or nil when it may. It refuses, as scontrol create reservation does: a window that
// ends before it starts; a partition or node that does not exist; a nodeCount larger than
// the nodes it may come from; a window that meets another reservation's on a node both
// hold (unless MAINT, which Slurm lets overlap); and, unless IGNORE_JOBS, a node whose
// running work would not have ended by its time limit when the window opens.
func judgeReservation(r, old *v1alpha1.Reservation, w *reservationWorld, schedulerNames []string) *refusal {
	r = r.DeepCopy()
	// The window as the spec gives it: the controller restarts an edited reservation's
	// window from its spec, and admission only sees reservations whose spec changed.
	r.Status.StartTime, r.Status.EndTime = nil, nil
	if start, end := r.Window(); !end.After(start.Time) {
		return &refusal{http.StatusUnprocessableEntity, fmt.Sprintf("%s: reservation %s ends (%s) before it starts (%s)",
			slurmInvalidTime, r.Name, stamp(end.Time), stamp(start.Time))}
	}
	if p := r.Spec.Partition; p != "" && !resvcontroller.PartitionKnown(p, w.parts, w.nodes) {
		return &refusal{http.StatusUnprocessableEntity, fmt.Sprintf("%s: partition %q does not exist (kubectl get partitions lists them)",
			slurmInvalidPartition, p)}
	}
	if missing := unknownNodes(r.Spec.Nodes, w.nodes); len(missing) > 0 {
		return &refusal{http.StatusUnprocessableEntity, fmt.Sprintf("%s: no such node: %s", slurmInvalidNodeName, strings.Join(missing, ", "))}
	}
	overlapping := overlappingHolders(r, w)
	if choosing(r, old) {
		return judgeNodeCount(r, w, overlapping, schedulerNames)
	}
	nodes := nodesHeld(r, old, w)
	if why := overlapWith(nodes, overlapping, w.now); why != "" {
		return &refusal{http.StatusForbidden, why}
	}
	if why := busyNodes(r, nodes, w, schedulerNames); why != "" {
		return &refusal{http.StatusForbidden, why}
	}
	return nil
}

// stamp is how a refusal writes a time.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func unknownNodes(names []string, nodes []resvcontroller.Node) []string {
	var missing []string
	for _, n := range names {
		if !slices.ContainsFunc(nodes, func(x resvcontroller.Node) bool { return x.Name == n }) {
			missing = append(missing, n)
		}
	}
	return missing
}

// choosing reports whether r's nodes are a count the controller has yet to choose: a
// nodeCount without a host list, not chosen before for the same count and partition.
func choosing(r, old *v1alpha1.Reservation) bool {
	if r.Spec.NodeCount == nil || len(r.Spec.Nodes) > 0 {
		return false
	}
	return old == nil || len(old.Status.Nodes) == 0 || old.Spec.NodeCount == nil || *old.Spec.NodeCount != *r.Spec.NodeCount ||
		old.Spec.Partition != r.Spec.Partition || old.HasFlag(v1alpha1.ReservationAnyNodes) != r.HasFlag(v1alpha1.ReservationAnyNodes)
}

// nodesHeld are the nodes r will hold: its host list, its partition's for PART_NODES,
// or those the controller chose for its count before (kept while the count stands).
func nodesHeld(r, old *v1alpha1.Reservation, w *reservationWorld) []string {
	switch {
	case len(r.Spec.Nodes) > 0:
		return r.Spec.Nodes
	case r.Spec.NodeCount != nil && old != nil:
		return old.Status.Nodes
	case r.HasFlag(v1alpha1.ReservationPartNodes):
		var out []string
		for _, n := range w.nodes {
			if resvcontroller.InPartition(n.Labels, r.Spec.Partition, w.parts) {
				out = append(out, n.Name)
			}
		}
		return out
	}
	return nil
}

// overlappingHolders maps each node that another reservation holds in a window meeting
// r's to that reservation. MAINT may overlap others, as in Slurm: none count.
func overlappingHolders(r *v1alpha1.Reservation, w *reservationWorld) map[string]*v1alpha1.Reservation {
	if r.HasFlag(v1alpha1.ReservationMaint) {
		return nil
	}
	held := map[string]*v1alpha1.Reservation{}
	for _, o := range w.others {
		if o.Name == r.Name || o.DeletionTimestamp != nil || !resvcontroller.WindowsOverlap(r, o, w.now) {
			continue
		}
		for _, n := range resvcontroller.HeldNodes(o) {
			if held[n] == nil {
				held[n] = o
			}
		}
	}
	return held
}

// overlapWith says which reservation holds one of nodes in a window that meets the
// judged one's (held, from overlappingHolders).
func overlapWith(nodes []string, held map[string]*v1alpha1.Reservation, now time.Time) string {
	for _, n := range nodes {
		o := held[n]
		if o == nil {
			continue
		}
		start, end := o.WindowAt(now)
		how := ""
		if p := o.Period(); p > 0 {
			how = fmt.Sprintf(", repeating every %s", p)
		}
		return fmt.Sprintf("%s: reservation %s holds node %s from %s to %s%s", slurmOverlap, o.Name, n, stamp(start), stamp(end), how)
	}
	return ""
}

// busyNodes says which work on nodes would still run when r's window opens, or "" when
// none would (or r has IGNORE_JOBS). Work is what the reservation controller counts (a
// Sluice or GPU pod, bound and not ended) less what stays on any node (DaemonSet, static
// and validation pods) and r's own jobs; it ends by its time limit, never without one.
func busyNodes(r *v1alpha1.Reservation, nodes []string, w *reservationWorld, schedulerNames []string) string {
	if r.HasFlag(v1alpha1.ReservationIgnoreJobs) || len(nodes) == 0 {
		return ""
	}
	start, _ := r.WindowAt(w.now)
	on := map[string]bool{}
	for _, n := range nodes {
		on[n] = true
	}
	for _, p := range w.pods {
		if !on[p.Spec.NodeName] || !holdsNode(p, schedulerNames) {
			continue
		}
		group := w.groupOf(p)
		if jobstate.ReservationOfPod(p, group) == r.Name {
			continue
		}
		ends := workEnds(p, group)
		if !ends.After(start) {
			continue
		}
		until := "has no time limit (activeDeadlineSeconds)"
		if !ends.Equal(jobstate.Forever) {
			until = "may run until " + stamp(ends) + " by its time limit"
		}
		return fmt.Sprintf("%s: pod %s/%s on node %s %s, after the reservation starts at %s (flag IGNORE_JOBS creates it anyway)",
			slurmNodesBusy, p.Namespace, p.Name, p.Spec.NodeName, until, stamp(start))
	}
	return ""
}

// holdsNode reports whether p is work that keeps a node from a reservation.
func holdsNode(p *corev1.Pod, schedulerNames []string) bool {
	if !jobstate.IsWork(p, schedulerNames) {
		return false
	}
	if _, ok := p.Labels[v1alpha1.ValidationLabel]; ok {
		return false
	}
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return false
	}
	return !slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" })
}

// workEnds is when p ends: by its time limit, or by its deletion's grace period.
func workEnds(p *corev1.Pod, group *v1alpha1.PodGroup) time.Time {
	ends := jobstate.WorkEnds(p, group)
	if d := p.DeletionTimestamp; d != nil && d.Time.Before(ends) {
		return d.Time
	}
	return ends
}

// judgeNodeCount checks a count the controller will choose: its partition (any with
// ANY_NODES) must have that many nodes, that many that take work and no other
// reservation holds in a window meeting r's, and, without IGNORE_JOBS, that many of
// those idle by the time it opens, since the controller chooses the idlest.
func judgeNodeCount(r *v1alpha1.Reservation, w *reservationWorld, held map[string]*v1alpha1.Reservation, schedulerNames []string) *refusal {
	want := int(*r.Spec.NodeCount)
	anyNodes := r.HasFlag(v1alpha1.ReservationAnyNodes)
	where := "partition " + r.Spec.Partition
	if anyNodes {
		where = "the cluster"
	}
	var all, free []string
	for _, n := range w.nodes {
		if !anyNodes && !resvcontroller.InPartition(n.Labels, r.Spec.Partition, w.parts) {
			continue
		}
		all = append(all, n.Name)
		if !n.Unschedulable && held[n.Name] == nil {
			free = append(free, n.Name)
		}
	}
	switch {
	case !anyNodes && r.Spec.Partition == "":
		return &refusal{http.StatusUnprocessableEntity, fmt.Sprintf("%s: nodeCount needs a partition to take the nodes from (or flag ANY_NODES)", slurmInvalidPartition)}
	case len(all) < want:
		return &refusal{http.StatusUnprocessableEntity, fmt.Sprintf("%s: nodeCount %d, but %s has %d node(s)", slurmInvalidNodeCount, want, where, len(all))}
	case len(free) < want:
		return &refusal{http.StatusForbidden, fmt.Sprintf("%s: nodeCount %d, but %s has %d node(s) that take work and no other reservation holds then",
			slurmOverlap, want, where, len(free))}
	case r.HasFlag(v1alpha1.ReservationIgnoreJobs):
		return nil
	}
	idle := 0
	for _, n := range free {
		if busyNodes(r, []string{n}, w, schedulerNames) == "" {
			idle++
		}
	}
	if idle < want {
		start, _ := r.WindowAt(w.now)
		return &refusal{http.StatusForbidden, fmt.Sprintf("%s: nodeCount %d, but only %d node(s) of %s that no other reservation holds will be idle by %s (flag IGNORE_JOBS creates it anyway)",
			slurmNodesBusy, want, idle, where, stamp(start))}
	}
	return nil
}
