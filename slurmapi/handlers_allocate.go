package slurmapi

import (
	"bytes"
	"encoding/json"
)

// allocationScript stands in for the script while an allocation's job
// description is checked as a submission's; the stored job has none,
// which makes it an allocation (its batch host serves attaches).
const allocationScript = "#!/bin/sh\n"

// handleAllocate is POST job/allocate: a job with no script, whose
// resources wait for steps (`sluice srun` from the user's shell, `sluice
// salloc`). Everything else is checked as job/submit checks it.
func handleAllocate(s *Server, c *call) (map[string]any, error) {
	if e := s.limiter.allow(c.id.User, c.now); e != nil {
		return nil, e
	}
	if e := checkSubmitter(c.ctx, c.id.User, s.cfg.Submit); e != nil {
		return nil, e
	}
	body, e := readBody(c)
	if e != nil {
		return nil, e
	}
	var req struct {
		Job    map[string]json.RawMessage `json:"job"`
		Hetjob json.RawMessage            `json:"hetjob"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, BadRequest(ErrRestFailParsing, "body", "the body is not a job allocation request: %v", err)
	}
	if h := bytes.TrimSpace(req.Hetjob); len(h) > 0 && !bytes.Equal(h, []byte("null")) && !bytes.Equal(h, []byte("[]")) {
		return nil, BadRequest(ErrRestInvalidJobs, "hetjob", "heterogeneous allocations are not supported: allocate one job")
	}
	if req.Job == nil {
		return nil, BadRequest(ErrRestInvalidJobs, "job", "a job description is required")
	}
	if sc, ok := req.Job["script"]; ok && !bytes.Equal(bytes.TrimSpace(sc), []byte(`""`)) && !bytes.Equal(bytes.TrimSpace(sc), []byte("null")) {
		return nil, BadRequest(ErrRestInvalidJobs, "script", "an allocation has no script: submit a batch job with job/submit")
	}
	if _, ok := req.Job["array"]; ok {
		return nil, BadRequest(ErrRestInvalidJobs, "array", "an allocation cannot be a job array")
	}
	req.Job["script"], _ = json.Marshal(allocationScript)
	withScript, err := json.Marshal(map[string]any{"job": req.Job})
	if err != nil {
		return nil, err
	}
	cat, err := s.backend.Catalog(c.ctx)
	if err != nil {
		return nil, err
	}
	desc, warnings, e := DecodeSubmission(withScript, c.id.User, cat, s.cfg.Submit, c.now)
	if e != nil {
		return nil, e
	}
	desc.Script = ""
	if desc.Name == "sbatch" {
		desc.Name = "interactive"
	}
	if e := authorizeSubmission(desc, c.id); e != nil {
		return nil, e
	}
	if err := s.dependenciesExist(c.ctx, "job.dependency", desc.Dependency); err != nil {
		return nil, err
	}
	c.warnings = append(c.warnings, warnings...)
	StampSubmitHost(desc, c.r)
	res, err := s.backend.Submit(c.ctx, desc)
	if err != nil {
		return nil, err
	}
	return map[string]any{"job_id": int64(res.JobID), "job_submit_user_msg": res.Message}, nil
}
