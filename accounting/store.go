package accounting

import (
	"context"
	"time"
)

// Store is the ledger. Every write is idempotent: writing the same job,
// transition, node or down interval again changes nothing, so a recorder may
// replay its events after a crash.
type Store interface {
	// UpsertJob writes a job's descriptive fields (keyed by job id). When
	// transitions were recorded for the job, its state, start, end and
	// requeue count follow them rather than the record.
	UpsertJob(ctx context.Context, job Job) error
	// UpsertJobs writes many jobs in one transaction (the recorder's
	// reconcile pass); nothing is written if any job is invalid.
	UpsertJobs(ctx context.Context, jobs []Job) error
	// RecordTransitions writes state changes in one transaction and rederives
	// each touched job's runs and state.
	RecordTransitions(ctx context.Context, ts []Transition) error
	// RecordNodeDown writes (or closes, when End is set) a down interval keyed
	// by node and start.
	RecordNodeDown(ctx context.Context, d NodeDown) error
	// UpsertNode writes a node's capacity keyed by name.
	UpsertNode(ctx context.Context, n Node) error
	// RecordValidation writes a node's validation run keyed by node and start.
	RecordValidation(ctx context.Context, v NodeValidation) error
	// RecordSteps writes job steps keyed by job and step id.
	RecordSteps(ctx context.Context, steps []Step) error
	// RecordReservation writes a reservation's window keyed by name and start.
	RecordReservation(ctx context.Context, r Reservation) error
	// ForgetReservation removes a window that never opened (deleted before its start).
	ForgetReservation(ctx context.Context, name string, start time.Time) error

	// Jobs returns the jobs matching f, ordered by job id.
	Jobs(ctx context.Context, f JobFilter) ([]Job, error)
	// Transitions returns a job's history in order.
	Transitions(ctx context.Context, jobID int64) ([]Transition, error)
	// Runs returns the run intervals overlapping [from, to) with what each
	// job held; a zero bound is open.
	Runs(ctx context.Context, from, to time.Time) ([]RunUsage, error)
	// NodeDowns returns down intervals overlapping [from, to).
	NodeDowns(ctx context.Context, from, to time.Time) ([]NodeDown, error)
	// NodeValidations returns validation runs started within [from, to), by node and start.
	NodeValidations(ctx context.Context, from, to time.Time) ([]NodeValidation, error)
	// Steps returns the steps of jobs, by job id, the batch step first.
	Steps(ctx context.Context, jobIDs []int64) ([]Step, error)
	// Reservations returns the reservation windows overlapping [from, to), by name and start.
	Reservations(ctx context.Context, from, to time.Time) ([]Reservation, error)
	// Nodes returns every node ever recorded.
	Nodes(ctx context.Context) ([]Node, error)
	// HighestJobID is the largest job id the ledger holds (0 when empty):
	// where a lost job id counter must start again, so no id names two jobs.
	HighestJobID(ctx context.Context) (int64, error)

	Close() error
}

// JobFilter selects jobs the way sacct does. Empty lists match everything.
// With a window, a job matches when it existed during it: submitted before
// End and not ended before Start.
type JobFilter struct {
	JobIDs     []int64
	Users      []string
	Accounts   []string
	Partitions []string
	States     []JobState
	Names      []string // job names, exactly (sacct --name)
	Start      time.Time
	End        time.Time
}
