package slurmapi

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// stepLedger is a ledger that also keeps job steps (accounting.Ledger).
type stepLedger interface {
	Steps(ctx context.Context, jobIDs []int64) ([]accounting.Step, error)
}

// LiveSteps reads a running job's steps from the job itself (its batch
// host's launcher: slurmapi/kube.Launchers), which the ledger has only
// once the job has ended.
type LiveSteps interface {
	RunningSteps(ctx context.Context, job *Job) ([]accounting.Step, error)
}

// maxLiveJobs bounds the running jobs whose batch hosts one answer asks
// (sacct -j, job/{id}); a longer list shows what the ledger has.
const maxLiveJobs = 8

// attachSteps renders the steps of jobs into their slurmdb records
// (rendered[i] is jobs[i]'s): the ledger's, and for a few running jobs
// what their batch host says (RUNNING steps with their start, those
// ended since), as slurmctld shows steps while they run. Without a
// ledger that keeps steps, the records keep an empty list.
func attachSteps(ctx context.Context, b Backend, live LiveSteps, jobs []Job, rendered []map[string]any) error {
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
	steps = append(steps, liveSteps(ctx, live, jobs)...)
	steps = latestSteps(steps)
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

// liveSteps is the server's source of running jobs' steps: its step
// signaller, when that can also read them (slurmapi/kube.Launchers).
func (s *Server) liveSteps() LiveSteps {
	l, _ := s.cfg.Steps.(LiveSteps)
	return l
}

// liveSteps asks the batch hosts of jobs that run, if they are few.
func liveSteps(ctx context.Context, live LiveSteps, jobs []Job) []accounting.Step {
	if live == nil {
		return nil
	}
	var running []*Job
	for i := range jobs {
		if len(jobs[i].State) > 0 && jobs[i].State[0] == "RUNNING" && !jobs[i].Manifest {
			running = append(running, &jobs[i])
		}
	}
	if len(running) == 0 || len(running) > maxLiveJobs {
		return nil
	}
	var out []accounting.Step
	for _, j := range running {
		// A job with no launcher to ask, or one not reachable, shows what
		// the ledger has.
		jctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if st, err := live.RunningSteps(jctx, j); err == nil {
			out = append(out, st...)
		}
		cancel()
	}
	return out
}

// latestSteps keeps one record per job and step, the last given (the
// batch host's word over the ledger's, for a job still running), the
// batch step first, then by step number, as the ledger orders them.
func latestSteps(steps []accounting.Step) []accounting.Step {
	type key struct {
		job  int64
		step string
	}
	at := map[key]int{}
	var out []accounting.Step
	for _, st := range steps {
		k := key{st.JobID, st.StepID}
		if i, ok := at[k]; ok {
			out[i] = st
			continue
		}
		at[k] = len(out)
		out = append(out, st)
	}
	num := func(s accounting.Step) int64 {
		if s.StepID == accounting.BatchStep {
			return -1
		}
		n, _ := strconv.ParseInt(s.StepID, 10, 64)
		return n
	}
	slices.SortStableFunc(out, func(a, b accounting.Step) int {
		if a.JobID != b.JobID {
			return cmp.Compare(a.JobID, b.JobID)
		}
		return cmp.Compare(num(a), num(b))
	})
	return out
}
