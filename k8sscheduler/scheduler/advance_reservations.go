package scheduler

import (
	"slices"
	"strings"
	"time"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Advance reservations (the Reservation kind, Slurm's scontrol create reservation) reach
// the core as they are: the reservation controller resolves their nodes into status and
// moves a repeating one's window on; the scheduler only converts them. Named
// "advance" to keep them apart from the GPU reservation pods of reservations.go.

// reservationHandlers keeps the cache's Reservations: the shared cache's objects, held
// by pointer and converted once per snapshot (there are a handful, and their window
// depends on the time).
func (s *Scheduler) reservationHandlers() toolscache.ResourceEventHandler {
	return handler(func(r *v1alpha1.Reservation) { s.cache.setAdvanceReservation(r.Name, r) },
		func(r *v1alpha1.Reservation) { s.cache.setAdvanceReservation(r.Name, nil) })
}

// setAdvanceReservation adds, replaces or (nil) removes a Reservation. No job needs a
// rebuild: a job names its reservation by name, and the core matches the two each cycle.
func (c *cache) setAdvanceReservation(name string, r *v1alpha1.Reservation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r == nil {
		delete(c.advance, name)
	} else {
		if c.advance == nil {
			c.advance = map[string]*v1alpha1.Reservation{}
		}
		c.advance[name] = r
	}
	c.poke()
}

// advanceReservations converts the Reservations for a snapshot taken at now, in name
// order. Called with mu held.
func (c *cache) advanceReservations(now time.Time) []bridge.AdvanceReservation {
	if len(c.advance) == 0 {
		return nil
	}
	out := make([]bridge.AdvanceReservation, 0, len(c.advance))
	for _, r := range c.advance {
		out = append(out, convertReservation(r, now))
	}
	slices.SortFunc(out, func(a, b bridge.AdvanceReservation) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// convertReservation is the core's view of r at now. Its window is the one that holds now
// or comes next (WindowAt), so a repeating reservation moves on at its end even before
// the controller has written the next window into its status. Its nodes are the
// controller's (status.nodes); until it has resolved them, spec.nodes, so a host list
// holds from the first cycle.
func convertReservation(r *v1alpha1.Reservation, now time.Time) bridge.AdvanceReservation {
	start, end := r.WindowAt(now)
	nodes := r.Status.Nodes
	if len(nodes) == 0 {
		nodes = r.Spec.Nodes
	}
	return bridge.AdvanceReservation{
		Name: r.Name, Start: start, End: end, Nodes: nodes,
		Users: r.Spec.Users, Queues: r.Spec.Accounts, Scopes: r.Spec.Namespaces,
		Maint:    r.HasFlag(v1alpha1.ReservationMaint),
		Flex:     r.HasFlag(v1alpha1.ReservationFlex),
		Magnetic: r.HasFlag(v1alpha1.ReservationMagnetic),
	}
}

// nextReservationEdge is the next time after now at which a reservation starts or ends,
// zero when none will: the cycle loop runs a cycle then even if nothing else changes, so
// a window opens and closes on time.
func (c *cache) nextReservationEdge(now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Time
	for _, r := range c.advance {
		if t := r.NextEdge(now); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}
