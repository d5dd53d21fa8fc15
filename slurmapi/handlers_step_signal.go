package slurmapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
)

// StepSignaler signals one running step of a job (scancel JOB.STEP). It
// returns *Error for what the caller can act on (no such running step).
// slurmapi/kube implements it through the job's batch host.
type StepSignaler interface {
	SignalStep(ctx context.Context, job *Job, step int, signal int) error
}

// splitStepRef splits "123.4" into "123" and step 4; a ref without a
// step answers ok=false.
func splitStepRef(ref string) (job string, step int, ok bool, e *Error) {
	job, s, has := strings.Cut(ref, ".")
	if !has {
		return ref, 0, false, nil
	}
	if s == "batch" {
		return "", 0, false, BadRequest(ErrInvalidJobID, "job_id", "%q: the batch step is the job's script; signal the job (scancel -b) instead", ref)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return "", 0, false, BadRequest(ErrInvalidJobID, "job_id", "%q is not JOBID.STEP (a step number)", ref)
	}
	return job, n, true, nil
}

// killStep is DELETE job/{job_id} for "JOB.STEP": the signal (default
// SIGKILL, which ends the step's tasks) reaches every task of that step
// only; the job and its other steps go on.
func killStep(s *Server, c *call, step int) (map[string]any, error) {
	if s.cfg.Steps == nil {
		return nil, Errorf(http.StatusNotImplemented, ErrNotSupported, "job_id", "this server cannot reach job steps")
	}
	j, task, err := accessibleJob(s, c)
	if err != nil {
		return nil, err
	}
	if task != nil {
		return nil, BadRequest(ErrInvalidJobID, "job_id", "name an array task's step by the task's own job id")
	}
	sig, e := parseSignal(c.r.URL.Query().Get("signal"))
	if e != nil {
		return nil, e
	}
	if err := s.cfg.Steps.SignalStep(c.ctx, &j, step, sig); err != nil {
		return nil, err
	}
	st := killStatus(j.ID, nil)
	st["step_id"] = strconv.Itoa(step)
	return map[string]any{"status": []any{st}}, nil
}
