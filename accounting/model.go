// Package accounting is Sluice's ledger: every workload's life (Slurm-submitted
// or manifest-submitted), node down time, decayed usage for fair share and the
// data behind sacct, sshare and sreport. The Store interface is implemented by
// accounting/store (SQLite or PostgreSQL); accounting/report renders reports.
package accounting

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
)

// JobState is a Slurm job state name, as sacct prints it: the one read model's state
// (jobstate.State), so the ledger and every view name states with one type.
type JobState = jobstate.State

// The Slurm states the ledger records, by the names the ledger's code reads best with.
const (
	StatePending     = jobstate.Pending
	StateRunning     = jobstate.Running
	StateCompleted   = jobstate.Completed
	StateFailed      = jobstate.Failed
	StateCancelled   = jobstate.Cancelled
	StateTimeout     = jobstate.Timeout
	StatePreempted   = jobstate.Preempted
	StateNodeFail    = jobstate.NodeFail
	StateRequeued    = jobstate.Requeued
	StateOutOfMemory = jobstate.OutOfMemory
)

// AllStates lists every recorded state in Slurm's documentation order.
var AllStates = []JobState{StatePending, StateRunning, StateCompleted, StateFailed,
	StateCancelled, StateTimeout, StatePreempted, StateNodeFail, StateRequeued, StateOutOfMemory}

// ParseJobState accepts a Slurm state name (any case) or its sacct
// abbreviation (PD, R, CD, F, CA, TO, PR, NF, RQ, OOM).
func ParseJobState(s string) (JobState, error) {
	abbrev := map[string]JobState{"PD": StatePending, "R": StateRunning, "CD": StateCompleted,
		"F": StateFailed, "CA": StateCancelled, "TO": StateTimeout, "PR": StatePreempted,
		"NF": StateNodeFail, "RQ": StateRequeued, "OOM": StateOutOfMemory}
	up := upper(s)
	if st, ok := abbrev[up]; ok {
		return st, nil
	}
	for _, st := range AllStates {
		if string(st) == up {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown job state %q (want one of PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL, REQUEUED, OUT_OF_MEMORY)", s)
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// Origin says how a workload entered the cluster.
type Origin string

// Origins.
const (
	OriginSlurm      Origin = "slurm"
	OriginKubernetes Origin = "kubernetes"
)

// TRES is a set of trackable resources. GPUs are fractional: half a shared
// device is 0.5.
type TRES struct {
	CPUs     int64   `json:"cpu"`
	MemMB    int64   `json:"mem_mb"`
	GPUs     float64 `json:"gpus"`
	GPUMemMB int64   `json:"gpu_mem_mb"`
	Nodes    int64   `json:"nodes"`
	Billing  float64 `json:"billing,omitempty"`
}

// Job is one workload's ledger record. Times are UTC; the zero time means
// "not yet" (a pending job has no start, a running job no end).
type Job struct {
	JobID        int64     `json:"job_id"`
	ArrayJobID   int64     `json:"array_job_id,omitempty"`
	ArrayTaskID  int64     `json:"array_task_id"` // -1 when the job is not an array task
	Name         string    `json:"name"`
	User         string    `json:"user"`
	Account      string    `json:"account"`
	Partition    string    `json:"partition"`
	QOS          string    `json:"qos"`
	Origin       Origin    `json:"origin"`
	Namespace    string    `json:"namespace,omitempty"`
	PodGroup     string    `json:"podgroup,omitempty"`
	Submit       time.Time `json:"submit_time,omitzero"`
	Eligible     time.Time `json:"eligible_time,omitzero"`
	Start        time.Time `json:"start_time,omitzero"`
	End          time.Time `json:"end_time,omitzero"`
	State        JobState  `json:"state"`
	ExitCode     int       `json:"exit_code"`
	ExitSignal   int       `json:"exit_signal"`
	Requested    TRES      `json:"requested"`
	Allocated    TRES      `json:"allocated"`
	NodeList     string    `json:"node_list"`
	RequeueCount int       `json:"requeue_count"`
	// Reservation is the advance reservation it ran in ("" for none).
	Reservation string `json:"reservation,omitempty"`
	// Steps are the job's steps (JOBID.batch, JOBID.0, ...) where a report
	// reads them with the job; the ledger keeps them apart (Store.Steps).
	Steps []Step `json:"steps,omitempty"`
}

// Validate rejects a record the ledger cannot account for.
func (j Job) Validate() error {
	switch {
	case j.JobID <= 0:
		return fmt.Errorf("job id %d: must be positive", j.JobID)
	case j.Account == "":
		return fmt.Errorf("job %d: account is empty", j.JobID)
	case j.User == "":
		return fmt.Errorf("job %d: user is empty", j.JobID)
	case j.Origin != OriginSlurm && j.Origin != OriginKubernetes:
		return fmt.Errorf("job %d: origin %q is neither slurm nor kubernetes", j.JobID, j.Origin)
	case j.Allocated.GPUs < 0 || j.Requested.GPUs < 0 || j.Allocated.CPUs < 0 || j.Allocated.MemMB < 0:
		return fmt.Errorf("job %d: negative TRES", j.JobID)
	case !j.End.IsZero() && !j.Start.IsZero() && j.End.Before(j.Start):
		return fmt.Errorf("job %d: end %s before start %s", j.JobID, j.End.Format(time.RFC3339), j.Start.Format(time.RFC3339))
	}
	if _, err := ParseJobState(string(j.State)); err != nil {
		return fmt.Errorf("job %d: %w", j.JobID, err)
	}
	return nil
}

// Transition is one state change of a job. The ledger keys it by job id,
// time and state, so a recorder that replays its events writes nothing twice.
type Transition struct {
	JobID  int64     `json:"job_id"`
	At     time.Time `json:"at,omitzero"`
	State  JobState  `json:"state"`
	Reason string    `json:"reason,omitempty"`
}

// Validate rejects a transition the ledger cannot place.
func (t Transition) Validate() error {
	if t.JobID <= 0 {
		return fmt.Errorf("transition: job id %d must be positive", t.JobID)
	}
	if t.At.IsZero() {
		return fmt.Errorf("transition of job %d: time is unset", t.JobID)
	}
	if _, err := ParseJobState(string(t.State)); err != nil {
		return fmt.Errorf("transition of job %d: %w", t.JobID, err)
	}
	return nil
}

// Run is one interval during which a job held its allocation: from a RUNNING
// transition to the next transition that stops it. End is zero while it runs.
type Run struct {
	JobID int64     `json:"job_id"`
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
}

// RunUsage is a Run with what the job held and whom it is charged to, the
// row usage and sreport are computed from.
type RunUsage struct {
	Run
	User      string `json:"user"`
	Account   string `json:"account"`
	Partition string `json:"partition"`
	QOS       string `json:"qos"`
	Allocated TRES   `json:"allocated"`
	// Reservation is the job's advance reservation ("" for none).
	Reservation string `json:"reservation,omitempty"`
}

// Node is a node's capacity over the time it belonged to the cluster.
// Removed is zero while the node is still there.
type Node struct {
	Name string `json:"name"`
	// Partition is the node's sluice.dev/partition label ("" without one).
	Partition string    `json:"partition,omitempty"`
	TRES      TRES      `json:"tres"`
	Added     time.Time `json:"added,omitzero"`
	Removed   time.Time `json:"removed,omitzero"`
}

// NodeDown is an interval during which a node (or some of its GPUs) could not
// run work, as reported by remediation. End is zero while it is down.
type NodeDown struct {
	Node   string    `json:"node"`
	Start  time.Time `json:"start,omitzero"`
	End    time.Time `json:"end,omitzero"`
	Reason string    `json:"reason"`
	TRES   TRES      `json:"tres"` // what was lost: usually the node's whole capacity
}

// Validate rejects an interval that cannot be accounted.
func (d NodeDown) Validate() error {
	switch {
	case d.Node == "":
		return fmt.Errorf("node down: node name is empty")
	case d.Start.IsZero():
		return fmt.Errorf("node down %s: start is unset", d.Node)
	case !d.End.IsZero() && d.End.Before(d.Start):
		return fmt.Errorf("node down %s: end before start", d.Node)
	}
	return nil
}

// NodeValidation is one validation run of a node (an idle node's scheduled check or a
// repaired node's), as the remediation controller reports it.
type NodeValidation struct {
	Node      string    `json:"node"`
	Partition string    `json:"partition,omitempty"`
	Kind      string    `json:"kind"` // idle | repair
	Start     time.Time `json:"start"`
	End       time.Time `json:"end,omitzero"`
	Result    string    `json:"result"` // Passed | Failed | Preempted
	Detail    string    `json:"detail,omitempty"`
}

// Validate rejects a run that cannot be stored.
func (v NodeValidation) Validate() error {
	switch {
	case v.Node == "":
		return fmt.Errorf("node validation: node name is empty")
	case v.Start.IsZero():
		return fmt.Errorf("node validation %s: start is unset", v.Node)
	case !v.End.IsZero() && v.End.Before(v.Start):
		return fmt.Errorf("node validation %s: ends before it starts", v.Node)
	}
	return nil
}

// Reservation is one window of an advance reservation: what it held and for whom. A
// repeating reservation (DAILY, WEEKLY) has a record per window, keyed by name and start;
// one cut short (deleted, or its end moved) has its End moved.
type Reservation struct {
	Name     string    `json:"name"`
	Start    time.Time `json:"start_time"`
	End      time.Time `json:"end_time"`
	Nodes    string    `json:"nodes"` // a Slurm host list
	Flags    []string  `json:"flags,omitempty"`
	Accounts []string  `json:"accounts,omitempty"`
	Users    []string  `json:"users,omitempty"`
	TRES     TRES      `json:"tres"` // its nodes' capacity
}

// Validate rejects a window that cannot be accounted.
func (r Reservation) Validate() error {
	switch {
	case r.Name == "":
		return fmt.Errorf("reservation: name is empty")
	case r.Start.IsZero() || r.End.IsZero():
		return fmt.Errorf("reservation %s: start and end are required", r.Name)
	case r.End.Before(r.Start):
		return fmt.Errorf("reservation %s: end before start", r.Name)
	}
	return nil
}

// HasFlag reports whether the reservation had flag f (as scontrol spells it).
func (r Reservation) HasFlag(f string) bool {
	for _, g := range r.Flags {
		if strings.EqualFold(g, f) {
			return true
		}
	}
	return false
}
