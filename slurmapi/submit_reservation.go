package slurmapi

import (
	"net/http"
	"time"
)

// checkReservation refuses a job naming a reservation as slurmctld does at submission:
// one that does not exist (or has ended) is invalid (2053), one that lists neither the
// job's user nor its account denies access (2052). A job naming none passes.
func (c *Catalog) checkReservation(d *JobDesc, now time.Time) *Error {
	if d.Reservation == "" {
		return nil
	}
	r, ok := c.Reservations[d.Reservation]
	if !ok || !now.Before(r.End) {
		return BadRequest(ErrReservationInvalid, "job.reservation", "reservation %q does not exist (or has ended)", d.Reservation)
	}
	if !r.Admits(d.User, d.Account) {
		return Errorf(http.StatusForbidden, ErrReservationAccess, "job.reservation", "reservation %q admits neither user %s nor account %s", d.Reservation, d.User, d.Account)
	}
	return nil
}
