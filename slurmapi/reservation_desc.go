package slurmapi

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// reservationDescIn is what POST reservation and reservations/ read of a
// reservation_desc_msg: the fields Sluice's reservations have.
type reservationDescIn struct {
	Name      string    `json:"name"`
	StartTime resvTime  `json:"start_time"`
	EndTime   resvTime  `json:"end_time"`
	Duration  NoVal     `json:"duration"` // minutes
	NodeList  csvString `json:"node_list"`
	NodeCount NoVal     `json:"node_count"`
	Partition string    `json:"partition"`
	Users     csvString `json:"users"`
	Accounts  csvString `json:"accounts"`
	Flags     []string  `json:"flags"`
}

// reservationFieldsRead are the reservation_desc_msg fields reservationDescIn reads; any
// other given non-empty is refused, since dropping it would book something else.
var reservationFieldsRead = map[string]bool{"name": true, "start_time": true, "end_time": true, "duration": true,
	"node_list": true, "node_count": true, "partition": true, "users": true, "accounts": true, "flags": true}

// resvTime is reservation_desc_msg's time: a UNIX time (a number or no-value struct) or,
// as slurmrestd also takes, a time string as scontrol reads it (now+2minutes,
// 2025-03-01T09:00).
type resvTime struct {
	unix NoVal
	text string
}

func (t *resvTime) UnmarshalJSON(b []byte) error {
	var s string
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) && json.Unmarshal(b, &s) == nil && strings.TrimSpace(s) != "" {
		if _, err := parseWhole(s); err != nil {
			t.text = s
			return nil
		}
	}
	return t.unix.UnmarshalJSON(b)
}

// given reports whether the time was sent.
func (t resvTime) given() bool { return t.text != "" || t.unix.Set }

// at reads the time relative to now.
func (t resvTime) at(field string, now time.Time) (time.Time, *Error) {
	if t.text != "" {
		v, err := sbatch.ParseBegin(t.text, now)
		if err != nil {
			return time.Time{}, BadRequest(ErrInvalidTimeValue, field, "%s %q is not a time (now[+N{minutes|hours|days}], YYYY-MM-DD[THH:MM[:SS]], HH:MM[:SS])", field, t.text)
		}
		return v, nil
	}
	n, ok := t.unix.Value()
	if !ok || n <= 0 {
		return time.Time{}, BadRequest(ErrInvalidTimeValue, field, "%s must be a UNIX time", field)
	}
	return time.Unix(n, 0), nil
}

// unlimitedReservation is how long a reservation of Duration=UNLIMITED lasts, as in Slurm.
const unlimitedReservation = 365 * 24 * time.Hour

// decodeReservationDesc reads one reservation_desc_msg, refusing fields Sluice cannot book.
func decodeReservationDesc(raw json.RawMessage, source string) (*reservationDescIn, *Error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, BadRequest(ErrRestFailParsing, source, "%s", jsonProblem(err))
	}
	var refused []string
	for name, v := range fields {
		if !reservationFieldsRead[name] && !emptyJSON(v) {
			refused = append(refused, name)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return nil, BadRequest(ErrNotSupported, source+"."+refused[0], "%s: not supported; a reservation books named nodes (node_list), a count of a partition's nodes (node_count) or a partition's nodes (PART_NODES), for users and accounts", strings.Join(refused, ", "))
	}
	var in reservationDescIn
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, BadRequest(ErrRestFailParsing, source, "%s", jsonProblem(err))
	}
	return &in, nil
}

// apply writes what the description sets onto r: all of a new reservation, the changes
// of an update. Users and accounts given as +NAME or -NAME are added or removed, as
// scontrol's Users+= and Users-= send them; flags NO_X remove X.
func (in *reservationDescIn) apply(r *Reservation, now time.Time) *Error {
	length := r.End.Sub(r.Start)
	if in.StartTime.given() {
		t, e := in.StartTime.at("start_time", now)
		if e != nil {
			return e
		}
		r.Start = t
		if r.ByDuration {
			r.End = t.Add(length) // a booked length moves with its start
		}
	}
	if in.EndTime.given() && in.Duration.Set {
		return BadRequest(ErrInvalidTimeValue, "duration", "give end_time or duration, not both")
	}
	if in.EndTime.given() {
		t, e := in.EndTime.at("end_time", now)
		if e != nil {
			return e
		}
		r.End, r.ByDuration = t, false
	}
	if in.Duration.Set {
		d := unlimitedReservation
		if n, ok := in.Duration.Value(); ok {
			if n <= 0 {
				return BadRequest(ErrInvalidTimeValue, "duration", "duration must be at least one minute")
			}
			d = time.Duration(n) * time.Minute
		}
		r.End, r.ByDuration = r.Start.Add(d), true
	}
	if len(in.NodeList) > 0 {
		if e := in.applyNodes(r); e != nil {
			return e
		}
	}
	if n, ok := in.NodeCount.Value(); ok && n > 0 {
		r.NodeCount, r.Nodes, r.NamedNodes = int(n), nil, false
	}
	if in.Partition != "" {
		r.Partition = in.Partition
	}
	r.Users = applyNames(r.Users, in.Users)
	r.Accounts = applyNames(r.Accounts, in.Accounts)
	return applyFlags(r, in.Flags)
}

// applyNodes sets the named nodes: a host list, or ALL (with PART_NODES: every node of
// the partition, as they come and go).
func (in *reservationDescIn) applyNodes(r *Reservation) *Error {
	list := strings.Join(in.NodeList, ",")
	if strings.EqualFold(list, "ALL") {
		r.Nodes, r.NamedNodes, r.NodeCount = nil, false, 0
		return nil
	}
	names, err := sbatch.ParseNodeList(list)
	if err != nil || len(names) == 0 {
		return BadRequest(ErrInvalidNodeName, "node_list", "node_list %q is not a node list: %v", list, err)
	}
	r.Nodes, r.NamedNodes, r.NodeCount = names, true, 0
	return nil
}

// applyNames changes a user or account list: +NAME adds, -NAME removes, and plain names
// replace the list.
func applyNames(list []string, given csvString) []string {
	replaced := false
	for _, item := range given {
		for _, name := range strings.Split(item, ",") {
			name = strings.TrimSpace(name)
			switch {
			case name == "":
			case strings.HasPrefix(name, "+"):
				if n := name[1:]; !slices.Contains(list, n) {
					list = append(list, n)
				}
			case strings.HasPrefix(name, "-"):
				list = slices.DeleteFunc(list, func(s string) bool { return s == name[1:] })
			default:
				if !replaced {
					list, replaced = nil, true
				}
				if !slices.Contains(list, name) {
					list = append(list, name)
				}
			}
		}
	}
	return list
}

// applyFlags adds the flags named and removes those named NO_X, keeping Slurm's order.
// SPEC_NODES is Slurm's own mark and is passed over; a flag Sluice does not honour is
// refused.
func applyFlags(r *Reservation, flags []string) *Error {
	for _, f := range flags {
		for _, name := range strings.Split(f, ",") {
			name = strings.ToUpper(strings.TrimSpace(name))
			off, negated := strings.CutPrefix(name, "NO_")
			switch {
			case name == "" || name == "SPEC_NODES":
			case negated && slices.Contains(ReservationFlags, off):
				r.Flags = slices.DeleteFunc(r.Flags, func(s string) bool { return s == off })
			case slices.Contains(ReservationFlags, name):
				if !r.HasFlag(name) {
					r.Flags = append(r.Flags, name)
				}
			default:
				return BadRequest(ErrNotSupported, "flags", "flag %s is not supported (Sluice honours %s)", name, strings.Join(settableFlags(), ", "))
			}
		}
	}
	SortReservationFlags(r.Flags)
	return nil
}

// settableFlags are the flags a reservation may be given.
func settableFlags() []string {
	return slices.DeleteFunc(slices.Clone(ReservationFlags), func(f string) bool { return f == "SPEC_NODES" })
}

// SortReservationFlags puts flags in the order Slurm prints them.
func SortReservationFlags(flags []string) {
	slices.SortStableFunc(flags, func(a, b string) int {
		return slices.Index(ReservationFlags, a) - slices.Index(ReservationFlags, b)
	})
}
