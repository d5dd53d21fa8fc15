package store

import (
	"context"
	"database/sql"

	"github.com/sluicehq/sluice/accounting"
)

// RecordSteps writes job steps keyed by job and step id; see accounting.Store.
func (s *SQLStore) RecordSteps(ctx context.Context, steps []accounting.Step) error {
	for _, st := range steps {
		if err := st.Validate(); err != nil {
			return err
		}
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		for _, st := range steps {
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO job_steps (job_id, step_id, name, state, exit_code, exit_signal,
				start_time, end_time, tasks, node_list, tres_cpu, tres_gpus, tres_nodes)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (job_id, step_id) DO UPDATE SET name = excluded.name, state = excluded.state,
				exit_code = excluded.exit_code, exit_signal = excluded.exit_signal, start_time = excluded.start_time,
				end_time = excluded.end_time, tasks = excluded.tasks, node_list = excluded.node_list,
				tres_cpu = excluded.tres_cpu, tres_gpus = excluded.tres_gpus, tres_nodes = excluded.tres_nodes`),
				st.JobID, st.StepID, st.Name, string(st.State), st.ExitCode, st.Signal, unix(st.Start), unix(st.End),
				st.Tasks, st.NodeList, st.TRES.CPUs, st.TRES.GPUs, st.TRES.Nodes); err != nil {
				return err
			}
		}
		return nil
	})
}

// Steps returns the steps of jobs, by job id, the batch step first, then
// by step number.
func (s *SQLStore) Steps(ctx context.Context, jobIDs []int64) ([]accounting.Step, error) {
	var out []accounting.Step
	for _, ids := range chunks(jobIDs, 500) {
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		rows, err := s.db.QueryContext(ctx, s.q(`SELECT job_id, step_id, name, state, exit_code, exit_signal, start_time, end_time,
			tasks, node_list, tres_cpu, tres_gpus, tres_nodes FROM job_steps WHERE job_id IN `+placeholders(len(ids))+`
			ORDER BY job_id, CASE WHEN step_id = 'batch' THEN -1 ELSE CAST(step_id AS INTEGER) END`), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var st accounting.Step
			var state string
			var start, end int64
			if err := rows.Scan(&st.JobID, &st.StepID, &st.Name, &state, &st.ExitCode, &st.Signal, &start, &end,
				&st.Tasks, &st.NodeList, &st.TRES.CPUs, &st.TRES.GPUs, &st.TRES.Nodes); err != nil {
				rows.Close()
				return nil, err
			}
			st.State, st.Start, st.End = accounting.JobState(state), fromUnix(start), fromUnix(end)
			out = append(out, st)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
