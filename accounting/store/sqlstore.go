package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// SQLStore is the ledger on SQLite or PostgreSQL.
type SQLStore struct {
	db      *sql.DB
	dialect dialect
}

var _ accounting.Store = (*SQLStore)(nil)

// Close releases the database.
func (s *SQLStore) Close() error { return s.db.Close() }

// q rebinds a query written with ? placeholders for the store's dialect.
func (s *SQLStore) q(query string) string {
	if s.dialect != dialectPostgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unix stores a time as Unix seconds, the zero time as 0.
func unix(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// fromUnix is unix's inverse, in UTC.
func fromUnix(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

// write runs fn in one transaction, committed when fn returns nil.
func (s *SQLStore) write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

const upsertJobSQL = `INSERT INTO jobs (job_id, array_job_id, array_task_id, name, user_name, account,
	partition_name, qos, origin, namespace, podgroup, submit_time, eligible_time, start_time, end_time,
	state, exit_code, exit_signal, req_cpus, req_mem_mb, req_gpus, req_gpu_mem_mb, req_nodes,
	alloc_cpus, alloc_mem_mb, alloc_gpus, alloc_gpu_mem_mb, alloc_nodes, node_list, requeue_count, reservation)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (job_id) DO UPDATE SET array_job_id = excluded.array_job_id,
	array_task_id = excluded.array_task_id, name = excluded.name, user_name = excluded.user_name,
	account = excluded.account, partition_name = excluded.partition_name, qos = excluded.qos,
	origin = excluded.origin, namespace = excluded.namespace, podgroup = excluded.podgroup,
	submit_time = excluded.submit_time, eligible_time = excluded.eligible_time,
	start_time = excluded.start_time, end_time = excluded.end_time, state = excluded.state,
	exit_code = excluded.exit_code, exit_signal = excluded.exit_signal,
	req_cpus = excluded.req_cpus, req_mem_mb = excluded.req_mem_mb, req_gpus = excluded.req_gpus,
	req_gpu_mem_mb = excluded.req_gpu_mem_mb, req_nodes = excluded.req_nodes,
	alloc_cpus = excluded.alloc_cpus, alloc_mem_mb = excluded.alloc_mem_mb,
	alloc_gpus = excluded.alloc_gpus, alloc_gpu_mem_mb = excluded.alloc_gpu_mem_mb,
	alloc_nodes = excluded.alloc_nodes, node_list = excluded.node_list,
	requeue_count = excluded.requeue_count, reservation = excluded.reservation`

func jobArgs(j accounting.Job) []any {
	return []any{j.JobID, j.ArrayJobID, j.ArrayTaskID, j.Name, j.User, j.Account,
		j.Partition, j.QOS, string(j.Origin), j.Namespace, j.PodGroup, unix(j.Submit), unix(j.Eligible),
		unix(j.Start), unix(j.End), string(j.State), j.ExitCode, j.ExitSignal,
		j.Requested.CPUs, j.Requested.MemMB, j.Requested.GPUs, j.Requested.GPUMemMB, j.Requested.Nodes,
		j.Allocated.CPUs, j.Allocated.MemMB, j.Allocated.GPUs, j.Allocated.GPUMemMB, j.Allocated.Nodes,
		j.NodeList, j.RequeueCount, j.Reservation}
}

// UpsertJob writes one job; see accounting.Store.
func (s *SQLStore) UpsertJob(ctx context.Context, j accounting.Job) error {
	return s.UpsertJobs(ctx, []accounting.Job{j})
}

// UpsertJobs writes many jobs in one transaction with multi-row upserts:
// the recorder's reconcile pass and bulk imports alike. Nothing is written
// when any job is invalid; a job listed twice is written as its last copy.
func (s *SQLStore) UpsertJobs(ctx context.Context, jobs []accounting.Job) error {
	written := map[int64]*accounting.Job{}
	var ids []int64
	for i := range jobs {
		j := &jobs[i]
		if err := j.Validate(); err != nil {
			return err
		}
		if written[j.JobID] == nil {
			ids = append(ids, j.JobID)
		}
		written[j.JobID] = j
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		for _, chunk := range chunks(ids, batchRows) {
			var args []any
			for _, id := range chunk {
				args = append(args, jobArgs(*written[id])...)
			}
			if _, err := tx.ExecContext(ctx, s.q(multiRow(upsertJobSQL, len(chunk))), args...); err != nil {
				return fmt.Errorf("upsert jobs %d..%d: %w", chunk[0], chunk[len(chunk)-1], err)
			}
		}
		return s.rederive(ctx, tx, ids, written)
	})
}

// RecordTransitions writes transitions and rederives the touched jobs; see
// accounting.Store. Nothing is written when any transition is invalid.
func (s *SQLStore) RecordTransitions(ctx context.Context, ts []accounting.Transition) error {
	type key struct {
		job   int64
		at    int64
		state accounting.JobState
	}
	unique := map[key]int{} // one row per key: a multi-row upsert may not touch a row twice
	var rows []accounting.Transition
	var ids []int64
	touched := map[int64]bool{}
	for _, t := range ts {
		if err := t.Validate(); err != nil {
			return err
		}
		k := key{t.JobID, unix(t.At), t.State}
		if i, dup := unique[k]; dup {
			rows[i] = t
			continue
		}
		unique[k] = len(rows)
		rows = append(rows, t)
		if !touched[t.JobID] {
			touched[t.JobID] = true
			ids = append(ids, t.JobID)
		}
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		for first := 0; first < len(rows); first += batchRows {
			chunk := rows[first:min(first+batchRows, len(rows))]
			args := make([]any, 0, 4*len(chunk))
			for _, t := range chunk {
				args = append(args, t.JobID, unix(t.At), string(t.State), t.Reason)
			}
			if _, err := tx.ExecContext(ctx, s.q(multiRow(upsertTransitionSQL, len(chunk))), args...); err != nil {
				return fmt.Errorf("record transitions: %w", err)
			}
		}
		return s.rederive(ctx, tx, ids, nil)
	})
}
