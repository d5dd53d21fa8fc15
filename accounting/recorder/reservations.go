package recorder

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Reservations are recorded a window at a time, keyed by name and start, as Slurm's
// database keeps them: what the window held (its nodes' capacity) and for whom. A DAILY or
// WEEKLY reservation gets a record per window as its status moves on; one deleted while
// open is cut at its deletion; one deleted before it opened is forgotten.

// resvSeen is a reservation as last seen, and when it was deleted (zero while it lives).
type resvSeen struct {
	r       *v1alpha1.Reservation
	deleted time.Time
}

func (s *state) setReservation(r *v1alpha1.Reservation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resvs[r.Name] = resvSeen{r: r}
}

func (s *state) deleteReservation(r *v1alpha1.Reservation) {
	at := s.clock().UTC().Truncate(time.Second)
	if d := r.DeletionTimestamp; d != nil {
		at = d.UTC()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resvs[r.Name] = resvSeen{r: r, deleted: at}
}

// reservationRecord is a reservation's current window as the ledger keeps it; capacity
// gives each node's TRES.
func reservationRecord(r *v1alpha1.Reservation, capacity func(string) accounting.TRES) accounting.Reservation {
	start, end := r.Window()
	nodes := r.Status.Nodes
	if len(nodes) == 0 {
		nodes = r.Spec.Nodes // not resolved yet: what it names
	}
	nodes = slices.Sorted(slices.Values(nodes))
	rec := accounting.Reservation{Name: r.Name, Start: start.UTC(), End: end.UTC(), Nodes: strings.Join(nodes, ","),
		Accounts: r.Spec.Accounts, Users: r.Spec.Users}
	for _, f := range r.Spec.Flags {
		rec.Flags = append(rec.Flags, string(f))
	}
	for _, n := range nodes {
		c := capacity(n)
		t := &rec.TRES
		t.CPUs, t.MemMB, t.GPUs, t.GPUMemMB, t.Nodes = t.CPUs+c.CPUs, t.MemMB+c.MemMB, t.GPUs+c.GPUs, t.GPUMemMB+c.GPUMemMB, t.Nodes+1
	}
	return rec
}

// writeReservations records the reservations seen since the last write.
func (r *Recorder) writeReservations(ctx context.Context) error {
	s := r.st
	s.mu.Lock()
	seen := s.resvs
	s.resvs = map[string]resvSeen{}
	capacity := func(node string) accounting.TRES {
		if n, ok := s.nodes[node]; ok {
			return n.TRES
		}
		return s.wroteNode[node].TRES
	}
	recs := make(map[string]accounting.Reservation, len(seen))
	for name, v := range seen {
		recs[name] = reservationRecord(v.r, capacity)
	}
	s.mu.Unlock()
	for name, v := range seen {
		rec := recs[name]
		var err error
		switch {
		case v.deleted.IsZero():
			if rec.Start.IsZero() || rec.End.Before(rec.Start) {
				continue // an invalid spec the API server let through: nothing to account
			}
			if s.wroteResv[name] == fingerprintResv(rec) {
				continue
			}
			err = r.cfg.Store.RecordReservation(ctx, rec)
		case v.deleted.Before(rec.Start):
			err = r.cfg.Store.ForgetReservation(ctx, name, rec.Start)
		default:
			if v.deleted.Before(rec.End) {
				rec.End = v.deleted
			}
			err = r.cfg.Store.RecordReservation(ctx, rec)
		}
		if err != nil {
			s.mu.Lock()
			if _, newer := s.resvs[name]; !newer {
				s.resvs[name] = v
			}
			s.mu.Unlock()
			return fmt.Errorf("record reservation %s: %w", name, err)
		}
		s.wroteResv[name] = fingerprintResv(rec)
		if !v.deleted.IsZero() {
			delete(s.wroteResv, name)
		}
	}
	return nil
}

// fingerprintResv tells a record from the last one written for the name.
func fingerprintResv(r accounting.Reservation) string {
	return fmt.Sprintf("%v", r)
}
