package store

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

const jobColumns = `job_id, array_job_id, array_task_id, name, user_name, account, partition_name, qos,
	origin, namespace, podgroup, submit_time, eligible_time, start_time, end_time, state, exit_code,
	exit_signal, req_cpus, req_mem_mb, req_gpus, req_gpu_mem_mb, req_nodes, alloc_cpus, alloc_mem_mb,
	alloc_gpus, alloc_gpu_mem_mb, alloc_nodes, node_list, requeue_count, reservation`

// where accumulates SQL conditions and their arguments.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *where) in(column string, values []any) {
	if len(values) == 0 {
		return
	}
	w.add(column+" IN (?"+strings.Repeat(", ?", len(values)-1)+")", values...)
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// overlapping selects intervals [start, end) (end 0: still open) that
// overlap [from, to) (zero bounds: open).
func overlapping(start, end string, from, to time.Time) *where {
	w := &where{}
	if !to.IsZero() {
		w.add(start+" < ?", unix(to))
	}
	if !from.IsZero() {
		w.add("("+end+" = 0 OR "+end+" > ?)", unix(from))
	}
	return w
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// jobIDsPerQuery bounds the job ids one query names: SQLite refuses a statement of more
// than 32,766 parameters (PostgreSQL 65,535), and a caller may ask for more (a new
// leader's recorder with every job of the submit batches; sacct -j with a long list).
const jobIDsPerQuery = 10000

// Jobs returns the jobs matching f, by job id.
func (s *SQLStore) Jobs(ctx context.Context, f accounting.JobFilter) ([]accounting.Job, error) {
	if len(f.JobIDs) <= jobIDsPerQuery {
		return s.jobs(ctx, f)
	}
	ids := slices.Compact(slices.Sorted(slices.Values(f.JobIDs)))
	var out []accounting.Job
	for _, part := range chunks(ids, jobIDsPerQuery) { // ascending ids: the parts stay in order
		f.JobIDs = part
		jobs, err := s.jobs(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, jobs...)
	}
	return out, nil
}

// jobs is Jobs for at most jobIDsPerQuery job ids.
func (s *SQLStore) jobs(ctx context.Context, f accounting.JobFilter) ([]accounting.Job, error) {
	var w where
	w.in("job_id", anys(f.JobIDs))
	w.in("user_name", anys(f.Users))
	w.in("account", anys(f.Accounts))
	w.in("partition_name", anys(f.Partitions))
	w.in("name", anys(f.Names))
	states := make([]any, len(f.States))
	for i, st := range f.States {
		states[i] = string(st)
	}
	w.in("state", states)
	if !f.End.IsZero() {
		w.add("submit_time < ?", unix(f.End))
	}
	if !f.Start.IsZero() {
		w.add("(end_time = 0 OR end_time >= ?)", unix(f.Start))
	}
	rows, err := s.db.QueryContext(ctx, s.q("SELECT "+jobColumns+" FROM jobs"+w.String()+" ORDER BY job_id"), w.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []accounting.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// HighestJobID implements accounting.Store (the primary key's index answers it).
func (s *SQLStore) HighestJobID(ctx context.Context) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(job_id), 0) FROM jobs`).Scan(&id)
	return id, err
}

func scanJob(rows *sql.Rows) (accounting.Job, error) {
	var j accounting.Job
	var origin, state string
	var submit, eligible, start, end int64
	err := rows.Scan(&j.JobID, &j.ArrayJobID, &j.ArrayTaskID, &j.Name, &j.User, &j.Account, &j.Partition, &j.QOS,
		&origin, &j.Namespace, &j.PodGroup, &submit, &eligible, &start, &end, &state, &j.ExitCode,
		&j.ExitSignal, &j.Requested.CPUs, &j.Requested.MemMB, &j.Requested.GPUs, &j.Requested.GPUMemMB,
		&j.Requested.Nodes, &j.Allocated.CPUs, &j.Allocated.MemMB, &j.Allocated.GPUs, &j.Allocated.GPUMemMB,
		&j.Allocated.Nodes, &j.NodeList, &j.RequeueCount, &j.Reservation)
	j.Origin, j.State = accounting.Origin(origin), accounting.JobState(state)
	j.Submit, j.Eligible, j.Start, j.End = fromUnix(submit), fromUnix(eligible), fromUnix(start), fromUnix(end)
	return j, err
}

// Transitions returns a job's history in order.
func (s *SQLStore) Transitions(ctx context.Context, jobID int64) ([]accounting.Transition, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT job_id, at, state, reason FROM job_transitions WHERE job_id = ?`), jobID)
	if err != nil {
		return nil, err
	}
	history, err := scanTransitions(rows)
	ts := history[jobID]
	accounting.SortTransitions(ts)
	return ts, err
}

// Runs returns the run intervals overlapping [from, to) with the job's
// charge and allocation, by job and start.
func (s *SQLStore) Runs(ctx context.Context, from, to time.Time) ([]accounting.RunUsage, error) {
	w := overlapping("r.start_time", "r.end_time", from, to)
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT r.job_id, r.start_time, r.end_time, j.user_name, j.account,
		j.partition_name, j.qos, j.alloc_cpus, j.alloc_mem_mb, j.alloc_gpus, j.alloc_gpu_mem_mb, j.alloc_nodes, j.reservation
		FROM job_runs r JOIN jobs j ON j.job_id = r.job_id`+w.String()+`
		ORDER BY r.job_id, r.start_time`), w.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []accounting.RunUsage
	for rows.Next() {
		var r accounting.RunUsage
		var start, end int64
		a := &r.Allocated
		if err := rows.Scan(&r.JobID, &start, &end, &r.User, &r.Account, &r.Partition, &r.QOS,
			&a.CPUs, &a.MemMB, &a.GPUs, &a.GPUMemMB, &a.Nodes, &r.Reservation); err != nil {
			return nil, err
		}
		r.Start, r.End = fromUnix(start), fromUnix(end)
		out = append(out, r)
	}
	return out, rows.Err()
}
