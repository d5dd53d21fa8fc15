package slurmapi

import (
	"context"
	"slices"
	"time"
)

// Reservation is an advance reservation (on Kubernetes a Reservation object) as Slurm
// shows it: scontrol show reservation, sinfo -T, reservations/.
type Reservation struct {
	Name string
	// Start and End are the current window (a DAILY or WEEKLY one moves on).
	Start, End time.Time
	// ByDuration says the window was booked by its length (Duration=), not its end: an
	// update that moves the start keeps the length.
	ByDuration bool
	// Nodes are the nodes it holds, or those it names while they are not resolved yet.
	Nodes []string
	// NodeCount is the count asked for (NodeCnt=); 0 when the nodes are named.
	NodeCount int
	// NamedNodes says the nodes were named (Nodes=), which Slurm shows as SPEC_NODES.
	NamedNodes bool
	Partition  string
	Users      []string
	Accounts   []string
	// Flags are Slurm's names (MAINT, FLEX, ...), in ReservationFlags' order.
	Flags []string
	// CPUs and GPUs are its nodes' (CoreCnt, TRES).
	CPUs, GPUs int64
}

// ReservationFlags are the reservation flags Sluice honours, in the order Slurm prints
// them; SPEC_NODES is Slurm's mark of named nodes, shown and never set.
var ReservationFlags = []string{"MAINT", "FLEX", "IGNORE_JOBS", "DAILY", "WEEKLY", "SPEC_NODES", "ANY_NODES", "PART_NODES", "PURGE_COMP", "MAGNETIC"}

// HasFlag reports whether the reservation has flag f.
func (r *Reservation) HasFlag(f string) bool { return slices.Contains(r.Flags, f) }

// Active reports whether the reservation's window is open at now, as Slurm's State=ACTIVE.
func (r *Reservation) Active(now time.Time) bool { return !now.Before(r.Start) && now.Before(r.End) }

// Admits reports whether a job of user in account may use the reservation: it lists the
// user or the account (Slurm's Users= and Accounts=).
func (r *Reservation) Admits(user, account string) bool {
	return slices.Contains(r.Users, user) || slices.Contains(r.Accounts, account)
}

// ReservationBackend reads and writes advance reservations (scontrol create, update,
// delete and show reservation). Writers are checked by the server (operators and
// administrators); the backend checks what needs the cluster: that named nodes and the
// partition exist, and the cluster's own refusals (an overlap).
type ReservationBackend interface {
	Reservations(ctx context.Context) ([]Reservation, error)
	// CreateReservation stores a new reservation: ErrReservationNameDup when the name is
	// taken.
	CreateReservation(ctx context.Context, r Reservation) error
	// UpdateReservation applies change to the stored reservation and writes it back,
	// guarded by the version it read: 404 ErrReservationInvalid when there is none.
	UpdateReservation(ctx context.Context, name string, change func(*Reservation) *Error) error
	// DeleteReservation removes it: 404 ErrReservationInvalid when there is none.
	DeleteReservation(ctx context.Context, name string) error
}
