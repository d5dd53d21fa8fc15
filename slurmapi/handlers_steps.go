package slurmapi

// route: GET /sluice/v1/job/{job_id}/steps -> (*Server).JobStepsHandler,
// mounted by the binary next to the API, as JobLogPath: Sluice's own
// endpoint, in no data_parser document.

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/sluicehq/sluice/accounting"
)

// JobStepsPath is where `sluice sacct` reads a running job's steps: the
// ledger's and what the job's batch host says of them now (RUNNING steps
// with their start), as slurmdb job/{id} renders them.
const JobStepsPath = "/sluice/v1/job/{job_id}/steps"

// JobSteps is JobStepsPath's answer.
type JobSteps struct {
	Steps []accounting.Step `json:"steps"`
}

// JobStepsHandler serves JobStepsPath to whoever may see the job.
func (s *Server) JobStepsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id, err := s.cfg.Auth.Authenticate(r, start)
		if err == nil {
			err = s.serveJobSteps(w, r, id)
		}
		if err != nil {
			plainError(w, err)
		}
		s.stats.record("GET sluice/job/{job_id}/steps", id.User, time.Since(start))
	})
}

func (s *Server) serveJobSteps(w http.ResponseWriter, r *http.Request, id Identity) *Error {
	if s.backend == nil {
		return Errorf(http.StatusServiceUnavailable, ErrNotSupported, "sluice", "this server runs without a cluster backend")
	}
	c := &call{ctx: r.Context(), r: r, id: id, vars: mux.Vars(r)}
	job, task, err := visibleJob(s, c)
	if err != nil {
		return s.asError(err)
	}
	if task != nil {
		return BadRequest(ErrInvalidJobID, "job_id", "name an array task by its own job id for its steps")
	}
	var steps []accounting.Step
	if l, ok := ledgerOf(s.backend).(stepLedger); ok {
		if steps, err = l.Steps(r.Context(), []int64{int64(job.ID)}); err != nil {
			return s.asError(err)
		}
	}
	steps = latestSteps(append(steps, liveSteps(r.Context(), s.liveSteps(), []Job{job})...))
	steps = withRunningBatch(job, steps)
	if steps == nil {
		steps = []accounting.Step{}
	}
	writeJSON(w, http.StatusOK, JobSteps{Steps: steps})
	return nil
}

// withRunningBatch adds the batch step of a running batch job that has
// none yet (a one-node job has no launcher to ask, or it was not
// reached): RUNNING since the job started, on its first node, as
// slurmctld shows it. An allocation has no batch step.
func withRunningBatch(job Job, steps []accounting.Step) []accounting.Step {
	if job.Manifest || job.Desc.Script == "" || len(job.State) == 0 || job.State[0] != "RUNNING" || job.StartTime.IsZero() {
		return steps
	}
	for _, st := range steps {
		if st.StepID == accounting.BatchStep {
			return steps
		}
	}
	node := ""
	if len(job.NodeNames) > 0 {
		node = job.NodeNames[0]
	}
	batch := accounting.Step{JobID: int64(job.ID), StepID: accounting.BatchStep, Name: "batch", State: accounting.StateRunning,
		Start: job.StartTime, Tasks: 1, NodeList: node, TRES: accounting.TRES{CPUs: int64(max(job.Desc.CPUsPerTask, 1)), Nodes: 1}}
	return append([]accounting.Step{batch}, steps...)
}
