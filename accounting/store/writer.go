package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/accounting"
)

// batchRows is how many rows one multi-row statement carries: 31 columns x
// 200 rows stays under both SQLite's and PostgreSQL's parameter limits.
// Fewer, larger statements are what make batched ingest fast, above all over
// a PostgreSQL connection where each statement is a round trip.
const batchRows = 200

const upsertTransitionSQL = `INSERT INTO job_transitions (job_id, at, state, reason) VALUES (?, ?, ?, ?)
	ON CONFLICT (job_id, at, state) DO UPDATE SET reason = excluded.reason`

const insertRunSQL = `INSERT INTO job_runs (job_id, start_time, end_time) VALUES (?, ?, ?)`

// multiRow repeats the single VALUES tuple of an INSERT n times.
func multiRow(insert string, n int) string {
	head, rest, _ := strings.Cut(insert, "VALUES ")
	tuple, tail, _ := strings.Cut(rest, ")")
	tuple += ")"
	return head + "VALUES " + tuple + strings.Repeat(", "+tuple, n-1) + tail
}

func chunks(ids []int64, n int) [][]int64 {
	var out [][]int64
	for first := 0; first < len(ids); first += n {
		out = append(out, ids[first:min(first+n, len(ids))])
	}
	return out
}

func placeholders(n int) string {
	return "(?" + strings.Repeat(", ?", n-1) + ")"
}

func scanTransitions(rows *sql.Rows) (map[int64][]accounting.Transition, error) {
	defer rows.Close()
	out := map[int64][]accounting.Transition{}
	for rows.Next() {
		var t accounting.Transition
		var at int64
		var state string
		if err := rows.Scan(&t.JobID, &at, &state, &t.Reason); err != nil {
			return nil, err
		}
		t.At, t.State = fromUnix(at), accounting.JobState(state)
		out[t.JobID] = append(out[t.JobID], t)
	}
	return out, rows.Err()
}

// rederive replaces the runs of the given jobs (and, for jobs with a
// history, their state, start, end and requeue count) with what their
// stored transitions say. It replaces rather than appends, so running it
// twice is the same as once. written holds records just upserted: a record
// without history ran once, from its start to its end.
func (s *SQLStore) rederive(ctx context.Context, tx *sql.Tx, ids []int64, written map[int64]*accounting.Job) error {
	update, err := tx.PrepareContext(ctx, s.q(`UPDATE jobs SET state = ?, start_time = ?, end_time = ?, requeue_count = ? WHERE job_id = ?`))
	if err != nil {
		return err
	}
	defer update.Close()
	for _, chunk := range chunks(ids, batchRows) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		in := placeholders(len(chunk))
		rows, err := tx.QueryContext(ctx, s.q(`SELECT job_id, at, state, reason FROM job_transitions WHERE job_id IN `+in), args...)
		if err != nil {
			return err
		}
		history, err := scanTransitions(rows)
		if err != nil {
			return err
		}
		var runs []any
		for _, id := range chunk {
			if ts := history[id]; len(ts) > 0 {
				sum := accounting.Summarize(ts)
				if _, err := update.ExecContext(ctx, string(sum.State), unix(sum.Start), unix(sum.End), sum.RequeueCount, id); err != nil {
					return fmt.Errorf("update job %d from its transitions: %w", id, err)
				}
				for _, r := range sum.Runs {
					runs = append(runs, id, unix(r.Start), unix(r.End))
				}
			} else if j := written[id]; j != nil && !j.Start.IsZero() {
				runs = append(runs, id, unix(j.Start), unix(j.End))
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM job_runs WHERE job_id IN `+in), args...); err != nil {
			return err
		}
		for first := 0; first < len(runs); first += 3 * batchRows {
			part := runs[first:min(first+3*batchRows, len(runs))]
			if _, err := tx.ExecContext(ctx, s.q(multiRow(insertRunSQL, len(part)/3)), part...); err != nil {
				return fmt.Errorf("write runs: %w", err)
			}
		}
	}
	return nil
}
