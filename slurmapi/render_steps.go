package slurmapi

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// stepLedger is a ledger that also keeps job steps (accounting.Ledger).
type stepLedger interface {
	Steps(ctx context.Context, jobIDs []int64) ([]accounting.Step, error)
}

// attachSteps renders the steps the ledger holds for jobs into their
// slurmdb records (rendered[i] is jobs[i]'s); without a ledger that keeps
// steps, the records keep an empty list.
func attachSteps(ctx context.Context, b Backend, jobs []Job, rendered []map[string]any) error {
	l, ok := ledgerOf(b).(stepLedger)
	if !ok || len(jobs) == 0 {
		return nil
	}
	ids := make([]int64, len(jobs))
	at := make(map[int64]int, len(jobs))
	for i, j := range jobs {
		ids[i], at[int64(j.ID)] = int64(j.ID), i
	}
	steps, err := l.Steps(ctx, ids)
	if err != nil {
		return err
	}
	for _, st := range steps {
		if i, ok := at[st.JobID]; ok {
			rendered[i]["steps"] = append(rendered[i]["steps"].([]any), renderStep(jobs[i].ID, st))
		}
	}
	return nil
}

// renderStep is one step as slurmdbd's step record: "ID.batch" or
// "ID.N", its state, exit code, times, nodes, tasks and TRES.
func renderStep(jobID uint32, st accounting.Step) map[string]any {
	elapsed := int64(0)
	if !st.Start.IsZero() && !st.End.IsZero() {
		elapsed = int64(st.End.Sub(st.Start) / time.Second)
	}
	return map[string]any{
		"step":      map[string]any{"id": fmt.Sprintf("%d.%s", jobID, st.StepID), "name": st.Name},
		"state":     []any{string(st.State)},
		"exit_code": exitCode(&Job{ExitCode: st.ExitCode, Signal: st.Signal}),
		"time": map[string]any{"elapsed": elapsed, "start": Num(unixOrZero(st.Start)).tree(),
			"end": Num(unixOrZero(st.End)).tree()},
		"nodes": map[string]any{"count": st.TRES.Nodes, "range": st.NodeList},
		"tasks": map[string]any{"count": st.Tasks},
		"tres":  map[string]any{"allocated": tresList(st.TRES.String())},
	}
}
