package kube

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// specReservation reads a Reservation's spec as a Slurm reservation: what an update
// changes and writes back with toSpec.
func specReservation(r *v1alpha1.Reservation) slurmapi.Reservation {
	out := slurmapi.Reservation{
		Name: r.Name, Start: r.Spec.StartTime.Time, Partition: r.Spec.Partition,
		Users: slices.Clone(r.Spec.Users), Accounts: slices.Clone(r.Spec.Accounts),
		Nodes: slices.Clone(r.Spec.Nodes), NamedNodes: len(r.Spec.Nodes) > 0,
	}
	switch {
	case r.Spec.EndTime != nil:
		out.End = r.Spec.EndTime.Time
	case r.Spec.Duration != nil:
		out.End, out.ByDuration = out.Start.Add(r.Spec.Duration.Duration), true
	}
	if r.Spec.NodeCount != nil {
		out.NodeCount = int(*r.Spec.NodeCount)
	}
	for _, f := range r.Spec.Flags {
		out.Flags = append(out.Flags, string(f))
	}
	slurmapi.SortReservationFlags(out.Flags)
	return out
}

// shownReservation is a Reservation as scontrol shows it: its current window, the nodes
// the controller resolved (named nodes, or a partition's for PART_NODES, before it has),
// SPEC_NODES for named nodes, and its nodes' CPUs and GPUs.
func shownReservation(r *v1alpha1.Reservation, nodes []corev1.Node, parts []v1alpha1.Partition) slurmapi.Reservation {
	out := specReservation(r)
	start, end := r.Window()
	out.Start, out.End = start.Time, end.Time
	switch {
	case len(r.Status.Nodes) > 0 && !out.NamedNodes:
		out.Nodes = slices.Clone(r.Status.Nodes)
	case r.HasFlag(v1alpha1.ReservationPartNodes):
		out.Nodes = partitionNodes(r.Spec.Partition, nodes, parts)
	}
	if out.NamedNodes {
		out.Flags = append(out.Flags, "SPEC_NODES")
		slurmapi.SortReservationFlags(out.Flags)
	}
	for i := range nodes {
		if slices.Contains(out.Nodes, nodes[i].Name) {
			out.CPUs += nodes[i].Status.Allocatable.Cpu().Value()
			out.GPUs += v1alpha1.NodeGPUCount(&nodes[i])
		}
	}
	return out
}

// partitionNodes are the names of the nodes in partition, as the scheduler places them
// (v1alpha1.NodePartition).
func partitionNodes(partition string, nodes []corev1.Node, parts []v1alpha1.Partition) []string {
	byName := make(map[string]*v1alpha1.Partition, len(parts))
	for i := range parts {
		byName[parts[i].Name] = &parts[i]
	}
	var out []string
	for j := range nodes {
		if v1alpha1.NodePartition(nodes[j].Labels, byName) == partition {
			out = append(out, nodes[j].Name)
		}
	}
	return out
}

// toSpec writes a Slurm reservation onto a Reservation's spec: the window as it was
// booked (by end or by length), the nodes as asked for (named, a count, or a partition's).
func toSpec(m *slurmapi.Reservation, r *v1alpha1.Reservation) {
	r.Name = m.Name
	s := &r.Spec
	s.StartTime = metav1.NewTime(m.Start)
	s.EndTime, s.Duration = nil, nil
	if m.ByDuration {
		s.Duration = &metav1.Duration{Duration: m.End.Sub(m.Start)}
	} else {
		end := metav1.NewTime(m.End)
		s.EndTime = &end
	}
	s.Nodes, s.NodeCount = nil, nil
	if m.NamedNodes {
		s.Nodes = slices.Clone(m.Nodes)
	}
	if m.NodeCount > 0 {
		n := int32(m.NodeCount)
		s.NodeCount = &n
	}
	s.Partition, s.Users, s.Accounts = m.Partition, slices.Clone(m.Users), slices.Clone(m.Accounts)
	s.Flags = nil
	for _, f := range m.Flags {
		if f != "SPEC_NODES" {
			s.Flags = append(s.Flags, v1alpha1.ReservationFlag(f))
		}
	}
}

// listReservations lists the Reservation objects. A cluster without the kind (its CRD not
// installed) has none.
func listReservations(ctx context.Context, c client.Client) ([]v1alpha1.Reservation, error) {
	var list v1alpha1.ReservationList
	if err := c.List(ctx, &list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list Reservations: %w", err)
	}
	return list.Items, nil
}

// Reservations shows the Reservations whose window has not ended, by name: Slurm removes
// a reservation at its end (a repeating one moves on).
func (b *Backend) Reservations(ctx context.Context) ([]slurmapi.Reservation, error) {
	objs, err := listReservations(ctx, b.c)
	if err != nil || len(objs) == 0 {
		return nil, err
	}
	var nodes corev1.NodeList
	if err := b.c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	var parts v1alpha1.PartitionList
	if err := b.c.List(ctx, &parts); err != nil {
		return nil, fmt.Errorf("list Partitions: %w", err)
	}
	now := time.Now()
	out := make([]slurmapi.Reservation, 0, len(objs))
	for i := range objs {
		if r := shownReservation(&objs[i], nodes.Items, parts.Items); r.End.After(now) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b slurmapi.Reservation) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// catalogReservations are the reservations a submission may name. A server the RBAC does
// not let read them, or a cluster without the kind, has none: jobs naming one are refused
// as invalid, and the rest are not held up.
func catalogReservations(ctx context.Context, c client.Client) (map[string]*slurmapi.Reservation, error) {
	objs, err := listReservations(ctx, c)
	if apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]*slurmapi.Reservation, len(objs))
	for i := range objs {
		r := specReservation(&objs[i])
		start, end := objs[i].Window()
		r.Start, r.End = start.Time, end.Time
		out[r.Name] = &r
	}
	return out, nil
}

// CreateReservation creates the Reservation object after checking that its named nodes
// exist.
func (b *Backend) CreateReservation(ctx context.Context, m slurmapi.Reservation) error {
	if e := b.checkNodes(ctx, m.Nodes); e != nil {
		return e
	}
	r := &v1alpha1.Reservation{}
	toSpec(&m, r)
	if err := b.c.Create(ctx, r); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return slurmapi.BadRequest(slurmapi.ErrReservationNameDup, "name", "reservation %q exists already", m.Name)
		}
		return reservationRefused(m.Name, err)
	}
	b.forgetCatalog()
	return nil
}

// forgetCatalog drops the cached catalogue after a reservation write, so that a job
// submitted right after names the reservation as it now is (other replicas see it within
// CatalogTTL).
func (b *Backend) forgetCatalog() {
	b.catMu.Lock()
	b.catalog = nil
	b.catMu.Unlock()
}

// UpdateReservation changes the spec through change, written with the version read (a
// conflict reads it again).
func (b *Backend) UpdateReservation(ctx context.Context, name string, change func(*slurmapi.Reservation) *slurmapi.Error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var r v1alpha1.Reservation
		if err := b.c.Get(ctx, client.ObjectKey{Name: name}, &r); err != nil {
			return deleted(err, slurmapi.ErrReservationInvalid, "reservation", name)
		}
		m := specReservation(&r)
		if e := change(&m); e != nil {
			return e
		}
		if e := b.checkNodes(ctx, m.Nodes); e != nil {
			return e
		}
		toSpec(&m, &r)
		if err := b.c.Update(ctx, &r); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			return reservationRefused(name, err)
		}
		b.forgetCatalog()
		return nil
	})
}

// DeleteReservation deletes the Reservation object.
func (b *Backend) DeleteReservation(ctx context.Context, name string) error {
	err := b.c.Delete(ctx, &v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: name}})
	b.forgetCatalog()
	return deleted(err, slurmapi.ErrReservationInvalid, "reservation", name)
}

// checkNodes refuses node names the cluster has no Node of, as slurmctld refuses them.
func (b *Backend) checkNodes(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	var nodes corev1.NodeList
	if err := b.c.List(ctx, &nodes); err != nil {
		return fmt.Errorf("list Nodes: %w", err)
	}
	for _, n := range names {
		if !slices.ContainsFunc(nodes.Items, func(x corev1.Node) bool { return x.Name == n }) {
			return slurmapi.BadRequest(slurmapi.ErrInvalidNodeName, "node_list", "node %q does not exist", n)
		}
	}
	return nil
}

// reservationRefused words the cluster's refusal of a reservation: the admission webhook
// (an overlap, busy nodes) or the object's validation is the caller's to fix (400); the
// rest stays the API error it is.
func reservationRefused(name string, err error) error {
	if strings.Contains(err.Error(), "denied the request") || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return slurmapi.Errorf(http.StatusBadRequest, slurmapi.ErrReservationInvalid, "reservation", "the cluster refused reservation %s: %v", name, err)
	}
	return fmt.Errorf("write reservation %s: %w", name, err)
}

// markReserved flags the nodes of the reservations active at now as slurmctld does:
// MAINTENANCE for a MAINT reservation's, RESERVED for another's (sinfo's maint and resv).
func markReserved(out []slurmapi.Node, resvs []v1alpha1.Reservation, nodes []corev1.Node, parts []v1alpha1.Partition, now time.Time) {
	flag := map[string]string{}
	for i := range resvs {
		r := shownReservation(&resvs[i], nodes, parts)
		if !r.Active(now) {
			continue
		}
		for _, n := range r.Nodes {
			if r.HasFlag("MAINT") || flag[n] == "" {
				flag[n] = "RESERVED"
				if r.HasFlag("MAINT") {
					flag[n] = "MAINTENANCE"
				}
			}
		}
	}
	for i := range out {
		if f := flag[out[i].Name]; f != "" {
			out[i].State = append(out[i].State, f)
		}
	}
}
