// Package jobstate is Sluice's one job read model: which job a pod or a job id is
// (identity.go: a PodGroup object, or the group a bare pod implies), and what state a job
// is in, and why, from its PodGroup and pods (derive.go). Every view reads it: squeue,
// job/{id}, scontrol, scancel, logs, sdiag and --dependency (slurmapi), the ledger
// (accounting/recorder), the Slurm lifecycle that ends jobs, and the dashboard through
// the ledger. Nothing else maps pods or phases to Slurm states, or tells how a bare pod's
// job is found, so the views cannot disagree about a job.
//
// It lives beside the API types because every component may import those
// (docs/architecture.md, "Packages"); it imports nothing but them, the core API and
// controller-runtime's client interface (Read and Find list through a client or cache).
package jobstate

// State is a Slurm job state name, as squeue's long form and sacct print it.
type State string

const (
	Pending     State = "PENDING"
	Running     State = "RUNNING"
	Completed   State = "COMPLETED"
	Failed      State = "FAILED"
	Cancelled   State = "CANCELLED"
	Timeout     State = "TIMEOUT"
	Preempted   State = "PREEMPTED"
	NodeFail    State = "NODE_FAIL"
	OutOfMemory State = "OUT_OF_MEMORY"
	// Requeued is never a job's whole state: a requeued job is PENDING with the REQUEUED
	// flag (squeue), and the ledger records the requeue as a transition.
	Requeued State = "REQUEUED"
	// Completing is never a job's whole state either: a job that ended while some of its
	// pods are still terminating keeps its final state with the COMPLETING flag, as
	// Slurm's job that ended while its nodes still clean up (squeue and scontrol print
	// COMPLETING, sacct the final state).
	Completing State = "COMPLETING"
)

// Final reports whether a job in state s has ended for good. PREEMPTED is final only
// when no requeue follows; the ledger decides that from the history.
func (s State) Final() bool {
	switch s {
	case Completed, Failed, Cancelled, Timeout, NodeFail, OutOfMemory, Preempted:
		return true
	}
	return false
}

// Closed reports whether a job in state s has ended whatever follows: Final, less
// PREEMPTED, which a requeue may reopen. The ledger keeps a preempted run open on that
// account (accounting.Summarize) and, until a state is Closed, lets what the objects show
// later change it.
func (s State) Closed() bool { return s.Final() && s != Preempted }

// Failure reports whether a job in state s ended and failed, as Slurm's sdiag counts it:
// slurmctld sorts an ended job into completed (COMPLETED), canceled (CANCELLED) and
// failed, every other end (FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED), as
// its job-end handling does (JOB_COMPLETE and JOB_CANCELLED apart from "JOB_FAILED,
// JOB_TIMEOUT, etc.").
func (s State) Failure() bool { return s.Final() && s != Completed && s != Cancelled }

// Slurm's reason for a state, where the state alone decides it (a pending job's reason
// is why it waits, which the Slurm API reads from the scheduler's condition).
var reasons = map[State]string{
	Running: "None", Completed: "None", Failed: "NonZeroExitCode", Cancelled: "None",
	Timeout: "TimeLimit", Preempted: "None", NodeFail: "NodeDown", OutOfMemory: "OutOfMemory", Pending: "None",
}
