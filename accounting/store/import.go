package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/accounting"
)

// importChunk is how many jobs one multi-row INSERT carries: 30 columns x
// 200 rows stays under both SQLite's and PostgreSQL's parameter limits.
const importChunk = 200

// ImportJobs is the bulk path for records without a transition history
// (a ledger migrated from elsewhere, a benchmark's million jobs): jobs go in
// with multi-row upserts, each with the single run its start and end
// describe. It refuses a job that has recorded transitions, whose runs only
// UpsertJobs can rederive. Like UpsertJobs it writes all or nothing.
func (s *SQLStore) ImportJobs(ctx context.Context, jobs []accounting.Job) error {
	for _, j := range jobs {
		if err := j.Validate(); err != nil {
			return err
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for first := 0; first < len(jobs); first += importChunk {
		chunk := jobs[first:min(first+importChunk, len(jobs))]
		ids := make([]any, len(chunk))
		var jobArgsAll, runArgs []any
		for i, j := range chunk {
			ids[i] = j.JobID
			jobArgsAll = append(jobArgsAll, jobArgs(j)...)
			if !j.Start.IsZero() {
				runArgs = append(runArgs, j.JobID, unix(j.Start), unix(j.End))
			}
		}
		in := "(?" + strings.Repeat(", ?", len(ids)-1) + ")"
		var withHistory int64
		err := tx.QueryRowContext(ctx, s.q(`SELECT COALESCE(MIN(job_id), 0) FROM job_transitions WHERE job_id IN `+in), ids...).Scan(&withHistory)
		if err != nil {
			return err
		}
		if withHistory != 0 {
			return fmt.Errorf("import: job %d has recorded transitions; write it with UpsertJobs", withHistory)
		}
		if _, err := tx.ExecContext(ctx, s.q(multiRow(upsertJobSQL, len(chunk))), jobArgsAll...); err != nil {
			return fmt.Errorf("import jobs: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM job_runs WHERE job_id IN `+in), ids...); err != nil {
			return err
		}
		if n := len(runArgs) / 3; n > 0 {
			if _, err := tx.ExecContext(ctx, s.q(multiRow(`INSERT INTO job_runs (job_id, start_time, end_time) VALUES (?, ?, ?)`, n)), runArgs...); err != nil {
				return fmt.Errorf("import runs: %w", err)
			}
		}
	}
	return tx.Commit()
}

// multiRow repeats the single VALUES tuple of an INSERT n times.
func multiRow(insert string, n int) string {
	head, rest, _ := strings.Cut(insert, "VALUES ")
	tuple, tail, _ := strings.Cut(rest, ")")
	tuple += ")"
	return head + "VALUES " + tuple + strings.Repeat(", "+tuple, n-1) + tail
}
