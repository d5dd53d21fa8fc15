package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// resvRequest is a parsed `scontrol create|update reservation` line: the reservation's
// name and the reservation_desc_msg to send.
type resvRequest struct {
	name string
	desc map[string]any
}

// parseReservation reads `create reservation` (update false) or `update reservation`
// arguments, KEY=VALUE with scontrol's keys in any case; Users, Accounts and Flags also
// take += and -= on update. Times are read here, in the caller's time zone, as scontrol
// reads them. Errors are scontrol's words.
func parseReservation(args []string, update bool, now time.Time) (resvRequest, error) {
	verb := "created"
	if update {
		verb = "updated"
	}
	req := resvRequest{desc: map[string]any{}}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		op := byte(0)
		if ok && (strings.HasSuffix(k, "+") || strings.HasSuffix(k, "-")) {
			op, k = k[len(k)-1], k[:len(k)-1]
		}
		key := strings.ToLower(k)
		if !ok || (op != 0 && key != "users" && key != "accounts" && key != "flags") {
			return resvRequest{}, fmt.Errorf("Unknown parameter %s.  No reservation %s.", a, verb)
		}
		switch key {
		case "reservationname", "reservation", "resv":
			req.name = v
			req.desc["name"] = v
		case "starttime", "endtime":
			t, err := sbatch.ParseBegin(v, now)
			if err != nil {
				return resvRequest{}, fmt.Errorf("Invalid %s time %s.  No reservation %s.", strings.TrimSuffix(key, "time"), a, verb)
			}
			req.desc[strings.TrimSuffix(key, "time")+"_time"] = client.Set(t.Unix())
		case "duration":
			d, err := sbatch.ParseTimeLimit(v)
			if err != nil {
				return resvRequest{}, fmt.Errorf("Invalid duration %s.  No reservation %s.", a, verb)
			}
			if d == sbatch.Unlimited {
				req.desc["duration"] = client.NoVal{Set: true, Infinite: true}
			} else {
				req.desc["duration"] = client.Set(int64(d / time.Minute))
			}
		case "nodes":
			req.desc["node_list"] = []string{v}
		case "nodecnt", "nodecount":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n <= 0 {
				return resvRequest{}, fmt.Errorf("Invalid node count %s.  No reservation %s.", a, verb)
			}
			req.desc["node_count"] = client.Set(n)
		case "partitionname", "partition":
			req.desc["partition"] = v
		case "users", "accounts", "flags":
			req.desc[key] = withOp(key, strings.Split(v, ","), op)
		default:
			return resvRequest{}, fmt.Errorf("Unknown parameter %s.  No reservation %s.", a, verb)
		}
	}
	switch {
	case req.name == "" && update:
		return resvRequest{}, errors.New("Reservation must be given.  No reservation update.")
	case req.name == "":
		return resvRequest{}, errors.New("ReservationName must be given: Sluice names the Reservation object after it.  No reservation created.")
	case !update && req.desc["users"] == nil && req.desc["accounts"] == nil:
		return resvRequest{}, errors.New("Either Users/Groups and/or Accounts must be specified.  No reservation created.")
	}
	return req, nil
}

// withOp marks the names of Users+=, Accounts-= ... as the server reads them: +NAME adds,
// -NAME removes; a flag removed is NO_FLAG.
func withOp(key string, names []string, op byte) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		switch {
		case n == "":
		case op == '-' && key == "flags":
			out = append(out, "NO_"+strings.ToUpper(n))
		case op != 0 && key != "flags":
			out = append(out, string(op)+n)
		default:
			out = append(out, n)
		}
	}
	return out
}

// scontrolWriteReservation creates or updates a reservation. The REST call creates or
// changes by name, so the name is looked up first: create refuses one that exists and
// update one that does not, as slurmctld does.
func scontrolWriteReservation(ctx context.Context, c *client.Client, w io.Writer, req resvRequest, update bool) error {
	_, err := c.Reservation(ctx, req.name)
	exists := err == nil
	if err != nil && !client.IsNotFound(err) {
		return err
	}
	what := "creating"
	if update {
		what = "updating"
	}
	switch {
	case update && !exists:
		return errors.New("Error updating the reservation: Requested reservation is invalid")
	case !update && exists:
		return errors.New("Error creating the reservation: Duplicate reservation name")
	}
	if err := c.PostReservation(ctx, req.desc); err != nil {
		return fmt.Errorf("Error %s the reservation: %w", what, err)
	}
	if update {
		fmt.Fprintln(w, "Reservation updated.")
	} else {
		fmt.Fprintln(w, "Reservation created:", req.name)
	}
	return nil
}

// scontrolDeleteReservation deletes a reservation, printing nothing on success.
func scontrolDeleteReservation(ctx context.Context, c *client.Client, name string) error {
	if err := c.DeleteReservation(ctx, name); err != nil {
		if client.IsNotFound(err) {
			return fmt.Errorf("delete_reservation %s: Requested reservation is invalid", name)
		}
		return fmt.Errorf("delete_reservation %s: %w", name, err)
	}
	return nil
}

// reservationRecord is `scontrol show reservation`'s view of one reservation at now.
func reservationRecord(r client.Reservation, now time.Time) record {
	start, _ := r.StartTime.Value()
	end, _ := r.EndTime.Value()
	return record{
		{kv("ReservationName", r.Name), kv("StartTime", scontrolTime(r.StartTime)), kv("EndTime", scontrolTime(r.EndTime)),
			kv("Duration", reservationDuration(start, end))},
		{kv("Nodes", orNull(r.NodeList)), kv("NodeCnt", strconv.FormatInt(r.NodeCount, 10)), kv("CoreCnt", strconv.FormatInt(r.CoreCount, 10)),
			kv("Features", orNull(r.Features)), kv("PartitionName", orNull(r.Partition)), kv("Flags", strings.Join(r.Flags, ","))},
		{kv("TRES", orNull(r.TRES))},
		{kv("Users", orNull(r.Users)), kv("Groups", orNull(r.Groups)), kv("Accounts", orNull(r.Accounts)), kv("Licenses", orNull(r.Licenses)),
			kv("State", reservationState(r, now)), kv("BurstBuffer", "(null)"), kv("Watts", "n/a")},
		{kv("MaxStartDelay", "(null)")},
	}
}

// reservationDuration is a window's length as scontrol and sinfo -T write it.
func reservationDuration(start, end int64) string {
	return sbatch.FormatTimeLimit(time.Duration(max(end-start, 0)) * time.Second)
}

// reservationState is ACTIVE inside the window and INACTIVE outside it, as scontrol and
// sinfo -T judge it from the times.
func reservationState(r client.Reservation, now time.Time) string {
	start, _ := r.StartTime.Value()
	end, _ := r.EndTime.Value()
	if t := now.Unix(); start <= t && t < end {
		return "ACTIVE"
	}
	return "INACTIVE"
}

// showReservations reads one reservation or all of them for scontrol show; an unknown
// name is scontrol's "Reservation NAME not found".
func showReservations(ctx context.Context, c *client.Client, name string) ([]client.Reservation, error) {
	if name == "" {
		return c.Reservations(ctx)
	}
	r, err := c.Reservation(ctx, name)
	if client.IsNotFound(err) {
		return nil, fmt.Errorf("Reservation %s not found", name)
	}
	return []client.Reservation{r}, err
}

// sinfoReservationFormat is sinfo -T's line: name, state, start, end, duration, nodes.
const sinfoReservationFormat = "%-9s  %8s  %19s  %19s  %11s  %s\n"

// writeSinfoReservations prints sinfo -T.
func writeSinfoReservations(w io.Writer, list []client.Reservation, now time.Time) {
	if len(list) == 0 {
		fmt.Fprintln(w, "No reservations in the system")
		return
	}
	fmt.Fprintf(w, sinfoReservationFormat, "RESV_NAME", "STATE", "START_TIME", "END_TIME", "DURATION", "NODELIST")
	for _, r := range list {
		start, _ := r.StartTime.Value()
		end, _ := r.EndTime.Value()
		fmt.Fprintf(w, sinfoReservationFormat, r.Name, reservationState(r, now), scontrolTime(r.StartTime), scontrolTime(r.EndTime),
			reservationDuration(start, end), r.NodeList)
	}
}

// scontrolReservationVerb reads `create reservation KEY=VALUE...` and `delete reservation
// NAME` (or delete ReservationName=NAME), as scontrol takes them.
func scontrolReservationVerb(verb string, rest []string) (func(ctx context.Context, c *client.Client) error, error) {
	args := reservationArgs(rest)
	if verb == "create" {
		if len(args) == len(rest) && !isReservationUpdate(rest) {
			return nil, UsageError{"create what? create reservation KEY=VALUE..."}
		}
		req, err := parseReservation(args, false, time.Now())
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, c *client.Client) error {
			return scontrolWriteReservation(ctx, c, os.Stdout, req, false)
		}, nil
	}
	name := ""
	switch {
	case len(args) == 1 && len(rest) == 2:
		name = args[0]
	case len(rest) == 1:
		if k, v, ok := strings.Cut(rest[0], "="); ok && isReservationKey(k) {
			name = v
		}
	}
	if name == "" {
		return nil, UsageError{"delete what? delete reservation NAME"}
	}
	return func(ctx context.Context, c *client.Client) error { return scontrolDeleteReservation(ctx, c, name) }, nil
}

// reservationArgs are the arguments after a leading `reservation` (or `res`) word.
func reservationArgs(rest []string) []string {
	if len(rest) > 0 && len(rest[0]) >= 3 && strings.HasPrefix("reservation", strings.ToLower(rest[0])) {
		return rest[1:]
	}
	return rest
}

// isReservationUpdate reports whether update's arguments name a reservation: the word
// reservation, or a ReservationName= key.
func isReservationUpdate(rest []string) bool {
	if len(reservationArgs(rest)) != len(rest) {
		return true
	}
	for _, a := range rest {
		if k, _, ok := strings.Cut(a, "="); ok && isReservationKey(k) {
			return true
		}
	}
	return false
}

func isReservationKey(k string) bool {
	k = strings.ToLower(k)
	return k == "reservationname" || k == "reservation"
}
