package report

import (
	"context"
	"math"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// Advance reservations in sreport, as Slurm counts them:
//   - cluster Utilization: a reservation without IGNORE_JOBS holds its nodes for the whole
//     window, so the time its jobs left unused is not Idle: it is PLND Down for a MAINT
//     reservation and Allocated for any other (Slurm bundles it with the reservation's
//     jobs). IGNORE_JOBS reservations are not tracked, their jobs counted as any other.
//   - reservation Utilization: per window, what its jobs used of it (Allocated) and the
//     rest (Idle), the window never cut to the report's.

// resvTime is what a reservation window held of TRES name within [from, to) and before
// now, and how much of that its own jobs used.
func resvTime(r accounting.Reservation, runs []accounting.RunUsage, name string, from, to, now time.Time) (held, used float64) {
	held = r.TRES.Amount(name) * overlap(r.Start, r.End, from, to, now)
	// Within the window and the report's: the later start, the earlier end.
	lo, hi := r.Start, r.End
	if from.After(lo) {
		lo = from
	}
	if !to.IsZero() && to.Before(hi) {
		hi = to
	}
	for _, run := range runs {
		if run.Reservation == r.Name {
			used += run.Allocated.Amount(name) * overlap(run.Start, run.End, lo, hi, now)
		}
	}
	return held, math.Min(used, held)
}

// addReservations moves what tracked reservations held but did not use out of Idle.
func addReservations(r *UtilizationRow, resvs []accounting.Reservation, runs []accounting.RunUsage, q SreportQuery, now time.Time) {
	for _, rv := range resvs {
		if rv.HasFlag("IGNORE_JOBS") {
			continue
		}
		held, used := resvTime(rv, runs, r.TRES, q.Start, q.End, now)
		if rv.HasFlag("MAINT") {
			r.PlannedDown += held - used
		} else {
			r.Allocated += held - used
		}
	}
}

// ReservationRow is one reservation window of reservation Utilization, in TRES-seconds.
type ReservationRow struct {
	Cluster   string    `json:"cluster"`
	Name      string    `json:"name"`
	Start     time.Time `json:"start_time"`
	End       time.Time `json:"end_time"`
	TRES      string    `json:"tres"`
	Allocated float64   `json:"allocated_seconds"`
	Idle      float64   `json:"idle_seconds"`
}

// ReservationUtilization is sreport reservation Utilization: for every window that ran at
// any time in the report's, per TRES it held, what its jobs used and what stayed idle, over
// the whole window up to now (Slurm does not cut a reservation to the report's window).
func ReservationUtilization(ctx context.Context, s accounting.Store, q SreportQuery, now time.Time) ([]ReservationRow, error) {
	q, err := q.normalize(now)
	if err != nil {
		return nil, err
	}
	resvs, err := s.Reservations(ctx, q.Start, q.End)
	if err != nil {
		return nil, err
	}
	var out []ReservationRow
	for _, rv := range resvs {
		runs, err := s.Runs(ctx, rv.Start, rv.End)
		if err != nil {
			return nil, err
		}
		for _, name := range q.TRES {
			if rv.TRES.Amount(name) <= 0 {
				continue
			}
			held, used := resvTime(rv, runs, name, rv.Start, rv.End, now)
			out = append(out, ReservationRow{Cluster: q.Cluster, Name: rv.Name, Start: rv.Start, End: rv.End, TRES: name,
				Allocated: used, Idle: held - used})
		}
	}
	return out, nil
}

// ReservationTable lays out reservation Utilization as sreport does.
func ReservationTable(rows []ReservationRow, q SreportQuery) Table {
	q, _ = q.normalize(time.Now()) // defaults only; the query was checked when rows were made
	t := Table{Title: q.banner("Reservation Utilization"), Columns: []Column{{"Cluster", 9}, {"Name", 9},
		{"Start", 19}, {"End", 19}, {"TRES Name", 14}, {"Allocated", 20}, {"Idle", 20}}}
	for _, r := range rows {
		total := r.Allocated + r.Idle
		t.Rows = append(t.Rows, []string{r.Cluster, r.Name, slurmTime(r.Start), slurmTime(r.End), r.TRES,
			formatTime(r.Allocated, total, q.Units), formatTime(r.Idle, total, q.Units)})
	}
	return t
}
