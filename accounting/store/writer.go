package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sluicehq/sluice/accounting"
)

// writer holds the statements one write transaction prepares once and runs
// per job, which is what makes batched ingest fast.
type writer struct {
	upsertJob, upsertTransition, selectTransitions, updateSummary, deleteRuns, insertRun *sql.Stmt
}

func (s *SQLStore) newWriter(ctx context.Context, tx *sql.Tx) (*writer, error) {
	w := &writer{}
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		{&w.upsertJob, upsertJobSQL},
		{&w.upsertTransition, `INSERT INTO job_transitions (job_id, at, state, reason) VALUES (?, ?, ?, ?)
			ON CONFLICT (job_id, at, state) DO UPDATE SET reason = excluded.reason`},
		{&w.selectTransitions, `SELECT at, state, reason FROM job_transitions WHERE job_id = ?`},
		{&w.updateSummary, `UPDATE jobs SET state = ?, start_time = ?, end_time = ?, requeue_count = ? WHERE job_id = ?`},
		{&w.deleteRuns, `DELETE FROM job_runs WHERE job_id = ?`},
		{&w.insertRun, `INSERT INTO job_runs (job_id, start_time, end_time) VALUES (?, ?, ?)`},
	} {
		st, err := tx.PrepareContext(ctx, s.q(p.query))
		if err != nil {
			w.close()
			return nil, err
		}
		*p.dst = st
	}
	return w, nil
}

func (w *writer) close() {
	for _, st := range []*sql.Stmt{w.upsertJob, w.upsertTransition, w.selectTransitions, w.updateSummary, w.deleteRuns, w.insertRun} {
		if st != nil {
			st.Close()
		}
	}
}

func scanTransitions(rows *sql.Rows, jobID int64) ([]accounting.Transition, error) {
	defer rows.Close()
	var ts []accounting.Transition
	for rows.Next() {
		var at int64
		var state, reason string
		if err := rows.Scan(&at, &state, &reason); err != nil {
			return nil, err
		}
		ts = append(ts, accounting.Transition{JobID: jobID, At: fromUnix(at), State: accounting.JobState(state), Reason: reason})
	}
	return ts, rows.Err()
}

// refresh rederives a job's runs (and, when it has a history, its state,
// start, end and requeue count) from what is stored. It replaces rather than
// appends, so running it twice is the same as once. written is the record
// just upserted, or nil when only transitions changed.
func (w *writer) refresh(ctx context.Context, jobID int64, written *accounting.Job) error {
	rows, err := w.selectTransitions.QueryContext(ctx, jobID)
	if err != nil {
		return err
	}
	ts, err := scanTransitions(rows, jobID)
	if err != nil {
		return err
	}
	var runs []accounting.Run
	switch {
	case len(ts) > 0:
		sum := accounting.Summarize(ts)
		if _, err := w.updateSummary.ExecContext(ctx, string(sum.State), unix(sum.Start), unix(sum.End), sum.RequeueCount, jobID); err != nil {
			return fmt.Errorf("update job %d from its transitions: %w", jobID, err)
		}
		runs = sum.Runs
	case written != nil && !written.Start.IsZero():
		// A record without history (an import, or a recorder that saw only the
		// finished object) ran once, from its start to its end.
		runs = []accounting.Run{{JobID: jobID, Start: written.Start, End: written.End}}
	case written != nil:
		// Not started: no runs.
	default:
		return nil
	}
	if _, err := w.deleteRuns.ExecContext(ctx, jobID); err != nil {
		return err
	}
	for _, r := range runs {
		if _, err := w.insertRun.ExecContext(ctx, jobID, unix(r.Start), unix(r.End)); err != nil {
			return fmt.Errorf("write run of job %d: %w", jobID, err)
		}
	}
	return nil
}
