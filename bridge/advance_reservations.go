package bridge

import (
	"fmt"
	"time"
)

// AdvanceReservation books nodes for a window, as Slurm's advance reservations do (scontrol
// create reservation): from Start to End its nodes run only the jobs it admits, and before
// Start other jobs start on them only if their time limit ends by then, so the window is
// free when it opens (the backfill rule the core applies to gangs it holds nodes for).
//
// A job uses a reservation by naming it (Job.Reservation; sbatch --reservation) when its
// user, queue or scope is listed; such a job runs only on the reservation's nodes, only
// inside its window and only if its time limit ends by End, unless the reservation is Flex.
// Overlapping windows on one node are the front end's to refuse; the core honours each.
type AdvanceReservation struct {
	Name  string    `json:"name" yaml:"name"`
	Start time.Time `json:"start" yaml:"start"`
	End   time.Time `json:"end" yaml:"end"`
	Nodes []string  `json:"nodes" yaml:"nodes"`
	// Users, Queues (Slurm accounts) and Scopes (namespaces) may use it; a job is admitted
	// when any of the three lists it.
	Users  []string `json:"users,omitempty" yaml:"users,omitempty"`
	Queues []string `json:"queues,omitempty" yaml:"queues,omitempty"`
	Scopes []string `json:"scopes,omitempty" yaml:"scopes,omitempty"`
	// Maint marks a maintenance window: jobs kept off its nodes wait with Slurm's
	// "ReqNodeNotAvail, Reserved for maintenance".
	Maint bool `json:"maint,omitempty" yaml:"maint,omitempty"`
	// Flex lets its jobs start before Start, run past End and use nodes outside it too.
	Flex bool `json:"flex,omitempty" yaml:"flex,omitempty"`
	// Magnetic draws in jobs that may use it without their naming it: they run on its nodes
	// during the window as if they had asked, or elsewhere.
	Magnetic bool `json:"magnetic,omitempty" yaml:"magnetic,omitempty"`
}

// Reasons for jobs that a reservation holds back.
const (
	// ReasonReservationWait: the job's own reservation has not started, or its time limit
	// runs past the reservation's end (Slurm's "Reservation").
	ReasonReservationWait = "Reservation"
	// ReasonReservationDeleted: the job names a reservation that does not exist (deleted or
	// ended), or one it may not use.
	ReasonReservationDeleted = "ReservationDeleted"
	// ReasonMaintenance: the only nodes it could use are in a maintenance window.
	ReasonMaintenance = "ReqNodeNotAvail, Reserved for maintenance"
)

// resvState is a reservation of the snapshot that has not ended.
type resvState struct {
	r          *AdvanceReservation
	start, end int64 // unix nanoseconds
	users      map[string]bool
	queues     map[string]bool
	scopes     map[string]bool
	nodes      nodeBits
}

// buildAdvanceReservations indexes the reservations that have not ended and marks their
// nodes. It runs after the nodes and queues are built and before the jobs.
func (c *cycle) buildAdvanceReservations() {
	rs := c.s.AdvanceReservations
	c.resvIdx = nil
	c.resvs = c.resvs[:0]
	for _, i := range sortedByName(len(rs), func(i int) string { return rs[i].Name }) {
		r := &rs[i]
		start, end := nanos(r.Start), nanos(r.End)
		switch {
		case r.Name == "":
			c.problem("reservation", "has no name; ignored")
			continue
		case c.resvIdx[r.Name] != 0:
			c.problem("reservation "+r.Name, "defined twice; the second is ignored")
			continue
		case end <= start:
			c.problem("reservation "+r.Name, "ends before it starts; ignored")
			continue
		case end <= c.now:
			continue // ended: its jobs learn it is gone (ReservationDeleted)
		}
		st := resvState{r: r, start: start, end: end, users: set(r.Users), queues: set(r.Queues),
			scopes: set(r.Scopes), nodes: make(nodeBits, (len(c.nodes)+63)/64)}
		if c.resvIdx == nil {
			c.resvIdx = map[string]int32{}
		}
		c.resvIdx[r.Name] = int32(len(c.resvs)) + 1
		k := int32(len(c.resvs))
		for _, name := range r.Nodes {
			n, ok := c.nodeIdx[name]
			if !ok {
				c.problem("reservation "+r.Name, "node "+name+" does not exist; left out")
				continue
			}
			if !st.nodes.has(n) {
				st.nodes.add(n)
				c.nodes[n].resv = append(c.nodes[n].resv, k)
			}
		}
		c.resvs = append(c.resvs, st)
	}
	if len(c.resvs) < 2 {
		return // nothing can overlap; most cycles have no reservation at all
	}
	for n := range c.nodes {
		c.checkOverlaps(int32(n))
	}
}

// checkOverlaps reports reservations whose windows overlap on a node: the front ends refuse
// them, and the core, given them anyway, honours each. A maintenance window may overlap
// others, as in Slurm (MAINT): that is no problem.
func (c *cycle) checkOverlaps(n int32) {
	rs := c.nodes[n].resv
	for i, a := range rs {
		for _, b := range rs[i+1:] {
			ra, rb := &c.resvs[a], &c.resvs[b]
			if ra.start < rb.end && rb.start < ra.end && !ra.r.Maint && !rb.r.Maint {
				c.problem("reservation "+rb.r.Name, "overlaps reservation "+ra.r.Name+" on node "+c.nodes[n].name)
			}
		}
	}
}

// resvOf sets which reservation a job asked for and blocks it when it may not have it.
func (c *cycle) resvOf(js *jobState) {
	name := js.job.Reservation
	if name == "" {
		return
	}
	k := c.resvIdx[name]
	if k == 0 && len(js.job.Running) > 0 {
		return // running on after its reservation ended: nothing to hold it to
	}
	if k == 0 {
		js.block(ReasonReservationDeleted, fmt.Sprintf("reservation %s does not exist (deleted or ended)", name))
		return
	}
	if !c.resvs[k-1].admits(js) {
		js.block(ReasonReservationDeleted, fmt.Sprintf("reservation %s does not admit user %s, queue %s or scope %s", name,
			orNone(js.job.User), orNone(js.job.Queue), orNone(js.job.Scope)))
		return
	}
	js.resv = k
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// admits reports whether the reservation lists the job's user, queue or scope.
func (r *resvState) admits(js *jobState) bool {
	j := js.job
	return (j.User != "" && r.users[j.User]) || r.queues[j.Queue] || (j.Scope != "" && r.scopes[j.Scope])
}

// resvAdmit says why a job in a reservation may not start now, or "" when it may: its
// reservation has not begun, or the job would run past its end.
func (c *cycle) resvAdmit(js *jobState) (string, string) {
	if !c.resvWaits(js) {
		return "", ""
	}
	r := &c.resvs[js.resv-1]
	if c.now < r.start {
		return ReasonReservationWait, fmt.Sprintf("reservation %s starts at %s", r.r.Name, formatNanos(r.start))
	}
	return ReasonReservationWait, fmt.Sprintf("time limit %s runs past the end of reservation %s at %s",
		js.job.TimeLimit, r.r.Name, formatNanos(r.end))
}

// resvWaits reports whether a job's own reservation keeps it from starting now.
func (c *cycle) resvWaits(js *jobState) bool {
	if js.resv == 0 {
		return false
	}
	r := &c.resvs[js.resv-1]
	if r.r.Flex {
		return false
	}
	tl := int64(js.job.TimeLimit)
	return c.now < r.start || (tl > 0 && c.now+tl > r.end)
}

func formatNanos(t int64) string {
	return time.Unix(0, t).UTC().Format(time.RFC3339)
}

// resvBlocks reports whether reservations keep job ji off node n now, and records the
// first that did in at (for the pending reason). Most nodes have none and most jobs ask
// for none, so the common case is two comparisons.
func (c *cycle) resvBlocks(at *attempt, ji, n int32) bool {
	nd, js := &c.nodes[n], &c.jobs[ji]
	if js.resv != 0 {
		r := &c.resvs[js.resv-1]
		if r.nodes.has(n) {
			return c.resvWaits(js) // its own window
		}
		if !r.r.Flex {
			return true
		}
	}
	for _, k := range nd.resv {
		r := &c.resvs[k]
		if c.now >= r.start {
			if r.r.Magnetic && r.admits(js) {
				continue
			}
		} else if tl := int64(js.job.TimeLimit); tl > 0 && c.now+tl <= r.start {
			continue
		}
		if at != nil && at.hitResv == 0 {
			at.hitResv = k + 1
		}
		return true
	}
	return false
}

// explainResv is the pending reason of a gang that reservations kept off nodes it would
// have fitted on, "" when none did.
func (c *cycle) explainResv(at *attempt) (string, string) {
	if at.hitResv == 0 {
		return "", ""
	}
	r := &c.resvs[at.hitResv-1]
	when := "from " + formatNanos(r.start)
	if c.now >= r.start {
		when = "until " + formatNanos(r.end)
	}
	if r.r.Maint {
		return ReasonMaintenance, fmt.Sprintf("nodes it fits on are in maintenance reservation %s %s", r.r.Name, when)
	}
	return ReasonResources, fmt.Sprintf("nodes it fits on are reserved (reservation %s %s)", r.r.Name, when)
}

// resvEverAllows reports whether job ji could ever run on node n as far as its own
// reservation goes: a job in a reservation without Flex never leaves its nodes.
func (c *cycle) resvEverAllows(ji, n int32) bool {
	js := &c.jobs[ji]
	if js.resv == 0 {
		return true
	}
	r := &c.resvs[js.resv-1]
	return r.r.Flex || r.nodes.has(n)
}

// appendResvKey adds what makes reservations treat two jobs of one shape differently to a
// shape key: which reservation each asked for and, while any reservation exists, who they
// are and their time limit (future and Magnetic windows depend on them).
func (c *cycle) appendResvKey(b []byte, js *jobState) []byte {
	if len(c.resvs) == 0 {
		return b
	}
	return fmt.Appendf(b, "|resv%d|tl%d|%s|%s|%s", js.resv, js.job.TimeLimit, js.job.Queue, js.job.User, js.job.Scope)
}
