package slurmapi

import (
	"encoding/json"
	"slices"
	"time"
)

func handleReservations(s *Server, c *call) (map[string]any, error) {
	list, err := s.backend.Reservations(c.ctx)
	if err != nil {
		return nil, err
	}
	return renderReservations(list, c.now), nil
}

func handleReservation(s *Server, c *call) (map[string]any, error) {
	list, err := s.backend.Reservations(c.ctx)
	if err != nil {
		return nil, err
	}
	name := c.vars["reservation_name"]
	for i := range list {
		if list[i].Name == name {
			return renderReservations(list[i:i+1], c.now), nil
		}
	}
	return nil, NotFound(ErrReservationInvalid, "reservation_name", "reservation %q does not exist", name)
}

// requireOperator guards reservation writes: slurmctld lets operators and administrators
// create, change and delete reservations.
func requireOperator(c *call) *Error {
	if !c.id.IsOperator() {
		return Forbidden("authorization", "user %s may not create, change or delete reservations: only operators and administrators may", c.id.User)
	}
	return nil
}

func handleDeleteReservation(s *Server, c *call) (map[string]any, error) {
	if e := requireOperator(c); e != nil {
		return nil, e
	}
	if err := s.backend.DeleteReservation(c.ctx, c.vars["reservation_name"]); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// handlePostReservation is POST reservation: one reservation_desc_msg, created or, when
// its name exists, changed (as slurmrestd does).
func handlePostReservation(s *Server, c *call) (map[string]any, error) {
	body, e := reservationBody(c)
	if e != nil {
		return nil, e
	}
	return s.writeReservations(c, []json.RawMessage{body}, "reservation")
}

// handlePostReservations is POST reservations/: a reservation_mod_req's list.
func handlePostReservations(s *Server, c *call) (map[string]any, error) {
	body, e := reservationBody(c)
	if e != nil {
		return nil, e
	}
	var req struct {
		Reservations []json.RawMessage `json:"reservations"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, BadRequest(ErrRestFailParsing, "body", "%s", jsonProblem(err))
	}
	if len(req.Reservations) == 0 {
		return nil, BadRequest(ErrRestInvalidQuery, "reservations", "no reservations given")
	}
	return s.writeReservations(c, req.Reservations, "reservations")
}

func reservationBody(c *call) ([]byte, *Error) {
	if e := requireOperator(c); e != nil {
		return nil, e
	}
	return readBody(c)
}

// writeReservations creates or changes each described reservation, in order, stopping at
// the first refused; the answer restates what was written.
func (s *Server) writeReservations(c *call, descs []json.RawMessage, source string) (map[string]any, error) {
	cat, err := s.backend.Catalog(c.ctx)
	if err != nil {
		return nil, err
	}
	existing, err := s.backend.Reservations(c.ctx)
	if err != nil {
		return nil, err
	}
	written := make([]any, 0, len(descs))
	for _, raw := range descs {
		in, e := decodeReservationDesc(raw, source)
		if e != nil {
			return nil, e
		}
		var r Reservation
		switch {
		case in.Name == "":
			return nil, BadRequest(ErrReservationInvalid, "name", "a reservation needs a name (ReservationName=)")
		case slices.ContainsFunc(existing, func(x Reservation) bool { return x.Name == in.Name }):
			err = s.backend.UpdateReservation(c.ctx, in.Name, func(cur *Reservation) *Error {
				if e := in.apply(cur, c.now); e != nil {
					return e
				}
				r = *cur
				return cat.validReservation(cur, c.now)
			})
		default:
			r, e = cat.newReservation(in, c.now)
			if e != nil {
				return nil, e
			}
			err = s.backend.CreateReservation(c.ctx, r)
		}
		if err != nil {
			return nil, err
		}
		written = append(written, renderReservationDesc(&r))
	}
	return map[string]any{"reservations": written}, nil
}

// newReservation builds a reservation from its description and checks it.
func (c *Catalog) newReservation(in *reservationDescIn, now time.Time) (Reservation, *Error) {
	if !validObjectName(in.Name) {
		return Reservation{}, BadRequest(ErrReservationInvalid, "name", "reservation name %q must be lower-case letters, digits and '-', at most 63 (it names a Reservation object)", in.Name)
	}
	if !in.StartTime.given() {
		return Reservation{}, BadRequest(ErrInvalidTimeValue, "start_time", "a reservation needs a start time (StartTime=now, now+2minutes, 2025-03-01T09:00)")
	}
	if !in.EndTime.given() && !in.Duration.Set {
		return Reservation{}, BadRequest(ErrInvalidTimeValue, "end_time", "a reservation needs an end time or a duration (EndTime= or Duration=)")
	}
	r := Reservation{Name: in.Name}
	start, e := in.StartTime.at("start_time", now)
	if e != nil {
		return Reservation{}, e
	}
	r.Start, r.End = start, start // apply sets both from the description
	if e := in.apply(&r, now); e != nil {
		return Reservation{}, e
	}
	if r.NodeCount > 0 && r.Partition == "" && !r.HasFlag("ANY_NODES") {
		r.Partition = c.DefaultPartition // Slurm takes nodes of the default partition
	}
	return r, c.validReservation(&r, now)
}

// validReservation checks a reservation as slurmctld does before it stores one: a window
// that has not ended, someone who may use it, nodes to hold, and a partition and accounts
// that exist.
func (c *Catalog) validReservation(r *Reservation, now time.Time) *Error {
	switch {
	case !r.End.After(r.Start):
		return BadRequest(ErrInvalidTimeValue, "end_time", "the reservation ends (%s) before it starts (%s)", r.End.Format(time.RFC3339), r.Start.Format(time.RFC3339))
	case !r.End.After(now):
		return BadRequest(ErrInvalidTimeValue, "end_time", "the reservation would end (%s) before now", r.End.Format(time.RFC3339))
	case len(r.Users) == 0 && len(r.Accounts) == 0:
		return BadRequest(ErrReservationEmpty, "users", "name the users or accounts that may use the reservation (Users=, Accounts=)")
	case r.HasFlag("PART_NODES") && (r.Partition == "" || r.NamedNodes || r.NodeCount > 0):
		return BadRequest(ErrReservationInvalid, "flags", "PART_NODES reserves every node of a partition: give PartitionName= and Nodes=ALL (no node list or count)")
	case !r.NamedNodes && r.NodeCount == 0 && !r.HasFlag("PART_NODES"):
		return BadRequest(ErrInvalidNodeCount, "node_list", "name the nodes (Nodes=), a count (NodeCnt=) or a partition's nodes (PartitionName= Flags=PART_NODES)")
	}
	if r.Partition != "" {
		if _, ok := c.Partitions[r.Partition]; !ok {
			return BadRequest(ErrInvalidPartition, "partition", "partition %q does not exist (known: %s)", r.Partition, names(c.Partitions))
		}
	}
	for _, a := range r.Accounts {
		if _, ok := c.Accounts[a]; !ok {
			return BadRequest(ErrInvalidAccount, "accounts", "account %q does not exist", a)
		}
	}
	return nil
}

// renderReservationDesc restates a written reservation as a reservation_desc_msg.
func renderReservationDesc(r *Reservation) map[string]any {
	out := map[string]any{
		"name": r.Name, "start_time": unixNoVal(r.Start), "end_time": unixNoVal(r.End),
		"duration": Num(int64(r.End.Sub(r.Start) / time.Minute)).tree(),
		"users":    strList(r.Users), "accounts": strList(r.Accounts), "flags": strList(r.Flags),
		"partition": r.Partition, "node_list": strList(r.Nodes),
	}
	if r.NodeCount > 0 {
		out["node_count"] = Num(int64(r.NodeCount)).tree()
	}
	return out
}
