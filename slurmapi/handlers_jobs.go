package slurmapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// readBody reads a request body within the configured limit; too large is
// 413, as a body limit is not a malformed request.
func readBody(c *call) ([]byte, *Error) {
	b, err := io.ReadAll(c.r.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, Errorf(http.StatusRequestEntityTooLarge, ErrRestBadRequest, "body", "request body is over the %d byte limit", tooBig.Limit)
	case err != nil:
		return nil, BadRequest(ErrRestFailParsing, "body", "reading the request body failed: %v", err)
	}
	return b, nil
}

func handleSubmit(s *Server, c *call) (map[string]any, error) {
	// Every attempt counts, refused ones too: they cost the server alike.
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
	key, bodyHash, e := idempotencyKey(c.r, body)
	if e != nil {
		return nil, e
	}
	cat, err := s.backend.Catalog(c.ctx)
	if err != nil {
		return nil, err
	}
	desc, warnings, e := DecodeSubmission(body, c.id.User, cat, s.cfg.Submit, c.now)
	if e != nil {
		return nil, e
	}
	if e := authorizeSubmission(desc, c.id); e != nil {
		return nil, e
	}
	if err := s.dependenciesExist(c.ctx, "job.dependency", desc.Dependency); err != nil {
		return nil, err
	}
	c.warnings = append(c.warnings, warnings...)
	if desc.TestOnly = testOnly(c.r); !desc.TestOnly {
		desc.IdempotencyKey, desc.BodyHash = key, bodyHash
	}
	StampSubmitHost(desc, c.r)
	res, err := s.backend.Submit(c.ctx, desc)
	if err != nil {
		return nil, err
	}
	if desc.TestOnly {
		return testOnlyAnswer(desc, cat), nil // checked, and nothing stored
	}
	if res.StepID == "" {
		res.StepID = "batch"
	}
	return map[string]any{
		"job_id": int64(res.JobID), "step_id": res.StepID, "job_submit_user_msg": res.Message,
		// v0.0.41 nests the answer in "result"; newer versions drop it.
		"result": map[string]any{"job_id": int64(res.JobID), "step_id": res.StepID, "job_submit_user_msg": res.Message, "error_code": 0, "error": ""},
	}, nil
}

// visibleJobs lists the jobs the caller may see (CanSeeJob), changeableJobs those it may
// change (CanAccessJob). A plain user who may see only its own jobs is filtered by the
// backend; the rest is filtered here. A filter never widens or swaps: a user's filter
// naming other users matches nothing that user may not see or change.
func visibleJobs(s *Server, c *call, f JobFilter) ([]Job, error) {
	return jobsFor(s, c, f, c.id.seesOnlyOwnJobs(), c.id.CanSeeJob)
}

func changeableJobs(s *Server, c *call, f JobFilter) ([]Job, error) {
	return jobsFor(s, c, f, c.id.Role == RoleUser, c.id.CanAccessJob)
}

func jobsFor(s *Server, c *call, f JobFilter, ownOnly bool, keep func(owner, account string) bool) ([]Job, error) {
	if ownOnly {
		if len(f.Users) > 0 && !slices.Contains(f.Users, c.id.User) {
			return nil, nil
		}
		f.Users = []string{c.id.User}
	}
	jobs, err := s.backend.Jobs(c.ctx, f)
	if err != nil {
		return nil, err
	}
	out := jobs[:0]
	for _, j := range jobs {
		if keep(j.Desc.User, j.Desc.Account) {
			out = append(out, j)
		}
	}
	s.effectiveQOS(c, out)
	return out, nil
}

// effectiveQOS names the QOS a job without one runs under, as Slurm
// shows a job's QOS: its account's default, else "normal" where the site
// has it (a manifest workload names none). It also gives each job the
// priority scontrol and squeue show (jobPriority). Without the catalogue the
// jobs stay as they are.
func (s *Server) effectiveQOS(c *call, jobs []Job) {
	if len(jobs) == 0 {
		return
	}
	cat, err := s.backend.Catalog(c.ctx)
	if err != nil || cat == nil {
		return
	}
	for i := range jobs {
		j := &jobs[i]
		if j.Desc.QOS == "" {
			j.Desc.QOS = cat.defaultQOS(j.Desc.Account)
		}
		j.Priority = jobPriority(j, cat)
	}
}

// jobPriority is the priority a job is shown with: the number the scheduler orders the
// jobs inside a queue by, the QOS's priority plus an operator's (scontrol update
// priority=N adds to the QOS's, it does not replace it) less nice; 0 for a held job, as
// in Slurm.
func jobPriority(j *Job, cat *Catalog) int64 {
	if j.Desc.Hold {
		return 0
	}
	p := j.Priority - j.Desc.Nice
	if q := cat.QOS[j.Desc.QOS]; q != nil {
		p += q.Priority
	}
	return max(p, 0)
}

func handleJobs(s *Server, c *call) (map[string]any, error) {
	f := JobFilter{}
	if v := c.r.URL.Query().Get("update_time"); v != "" {
		t, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, BadRequest(ErrRestInvalidQuery, "update_time", "update_time must be a UNIX time, got %q", v)
		}
		f.Since = time.Unix(t, 0)
	}
	jobs, err := visibleJobs(s, c, f)
	if err != nil {
		return nil, err
	}
	return renderJobs(jobs, s.cfg.ClusterName, c.now), nil
}

func handleJobsState(s *Server, c *call) (map[string]any, error) {
	var f JobFilter
	for _, v := range c.r.URL.Query()["job_id"] {
		for _, idText := range strings.Split(v, ",") {
			id, e := parseJobID(idText, "job_id")
			if e != nil {
				return nil, e
			}
			f.IDs = append(f.IDs, id)
		}
	}
	jobs, err := visibleJobs(s, c, f)
	if err != nil {
		return nil, err
	}
	return renderJobs(jobs, s.cfg.ClusterName, c.now), nil
}

func parseJobID(s, source string) (uint32, *Error) {
	id, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil || id == 0 {
		return 0, BadRequest(ErrInvalidJobID, source, "%q is not a job id", s)
	}
	return uint32(id), nil
}

// parseJobRef reads a job id in a path: "123", or an array task "123_4".
func parseJobRef(s, source string) (uint32, *int, *Error) {
	idText, taskText, isTask := strings.Cut(s, "_")
	id, e := parseJobID(idText, source)
	if e != nil || !isTask {
		return id, nil, e
	}
	task, err := strconv.Atoi(taskText)
	if err != nil || task < 0 {
		return 0, nil, BadRequest(ErrInvalidJobID, source, "%q is not a job id or ARRAYID_TASK", s)
	}
	return id, &task, nil
}

// accessibleJob loads the job in the path (an array task resolved to its
// job, task is its index) and checks the caller's right to change it;
// visibleJob checks only the right to read it (CanSeeJob).
func accessibleJob(s *Server, c *call) (j Job, task *int, err error) {
	return pathJob(s, c, c.id.CanAccessJob)
}

func visibleJob(s *Server, c *call) (j Job, task *int, err error) {
	return pathJob(s, c, c.id.CanSeeJob)
}

func pathJob(s *Server, c *call, allowed func(owner, account string) bool) (j Job, task *int, err error) {
	id, task, e := parseJobRef(c.vars["job_id"], "job_id")
	if e != nil {
		return Job{}, nil, e
	}
	if task != nil {
		j, err = s.backend.ArrayTask(c.ctx, id, *task)
	} else {
		j, err = s.backend.Job(c.ctx, id)
	}
	if err != nil {
		return Job{}, nil, err
	}
	if !allowed(j.Desc.User, j.Desc.Account) {
		return Job{}, nil, Forbidden("job_id", "job %s belongs to %s in account %s; %s may not access it", c.vars["job_id"], j.Desc.User, j.Desc.Account, c.id.User)
	}
	return j, task, nil
}

// handleJob answers for one job; an array's id answers for the array's
// record and all its tasks, as scontrol show job does.
func handleJob(s *Server, c *call) (map[string]any, error) {
	j, task, err := visibleJob(s, c)
	if err != nil {
		return nil, err
	}
	jobs := []Job{j}
	if task == nil && j.ArrayJobID == j.ID && j.ArrayJobID != 0 {
		if jobs, err = s.backend.Jobs(c.ctx, JobFilter{IDs: []uint32{j.ID}}); err != nil {
			return nil, err
		}
	}
	s.effectiveQOS(c, jobs)
	return renderJobs(jobs, s.cfg.ClusterName, c.now), nil
}

// parseSignal reads a signal by number or name ("KILL", "SIGTERM");
// default KILL, which cancels.
func parseSignal(v string) (int, *Error) {
	if v == "" {
		return int(syscall.SIGKILL), nil
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 && n < 65 {
		return n, nil
	}
	name := strings.TrimPrefix(strings.ToUpper(v), "SIG")
	for n := 1; n < 32; n++ {
		if strings.TrimPrefix(strings.ToUpper(syscall.Signal(n).String()), "SIG") == name || signalName(n) == name {
			return n, nil
		}
	}
	return 0, BadRequest(ErrRestInvalidQuery, "signal", "unknown signal %q", v)
}

var signalNames = map[int]string{1: "HUP", 2: "INT", 3: "QUIT", 6: "ABRT", 9: "KILL", 10: "USR1", 12: "USR2", 15: "TERM", 18: "CONT", 19: "STOP"}

func signalName(n int) string { return signalNames[n] }

func killStatus(id uint32, e *Error) map[string]any {
	status := map[string]any{"string": "", "code": 0, "message": ""}
	if e != nil {
		status = map[string]any{"string": e.Short, "code": e.Number, "message": e.Description}
	}
	return map[string]any{"error": status, "step_id": "batch", "job_id": Num(int64(id)).tree(), "federation": map[string]any{"sibling": ""}}
}

func handleKillJob(s *Server, c *call) (map[string]any, error) {
	if job, step, ok, e := splitStepRef(c.vars["job_id"]); e != nil || ok {
		if e != nil {
			return nil, e
		}
		c.vars["job_id"] = job
		return killStep(s, c, step)
	}
	j, task, err := accessibleJob(s, c)
	if err != nil {
		return nil, err
	}
	sig, e := parseSignal(c.r.URL.Query().Get("signal"))
	if e != nil {
		return nil, e
	}
	if err := s.backend.SignalJob(c.ctx, j.ID, CancelRequest{Signal: sig, ArrayTask: task}); err != nil {
		return nil, err
	}
	return map[string]any{"status": []any{killStatus(j.ID, nil)}}, nil
}

// killJobsIn is the kill_jobs_msg body of DELETE jobs/.
type killJobsIn struct {
	Jobs      []string `json:"jobs"`
	Signal    string   `json:"signal"`
	Account   string   `json:"account"`
	JobName   string   `json:"job_name"`
	Partition string   `json:"partition"`
	QOS       string   `json:"qos"`
	UserName  string   `json:"user_name"`
	JobState  []string `json:"job_state"`
	// Filters Sluice cannot apply: refused, since ignoring a filter
	// would signal more jobs than asked.
	UserID      json.RawMessage `json:"user_id"`
	Reservation json.RawMessage `json:"reservation"`
	WCKey       json.RawMessage `json:"wckey"`
	Nodes       json.RawMessage `json:"nodes"`
}

// unsupportedFilter names a filter given that Sluice cannot apply, or "".
func (in *killJobsIn) unsupportedFilter() string {
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"user_id", in.UserID}, {"reservation", in.Reservation}, {"wckey", in.WCKey}, {"nodes", in.Nodes}} {
		if v := strings.TrimSpace(string(f.raw)); v != "" && v != "null" && v != `""` && v != "[]" {
			return f.name
		}
	}
	return ""
}

func handleKillJobs(s *Server, c *call) (map[string]any, error) {
	body, e := readBody(c)
	if e != nil {
		return nil, e
	}
	var in killJobsIn
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, BadRequest(ErrRestFailParsing, "body", "%s", jsonProblem(err))
	}
	sig, e := parseSignal(in.Signal)
	if e != nil {
		return nil, e
	}
	if name := in.unsupportedFilter(); name != "" {
		return nil, BadRequest(ErrNotSupported, name, "filtering jobs by %s is not supported; filter by user_name, account, partition, qos, job_name, job_state or name the jobs", name)
	}
	if in.UserName != "" && in.UserName != c.id.User && c.id.Role == RoleUser {
		return nil, Forbidden("user_name", "user %s may not signal jobs of %s; nothing was signalled", c.id.User, in.UserName)
	}
	f := JobFilter{States: in.JobState}
	var tasks []arrayTaskRef
	for _, idText := range in.Jobs {
		id, task, e := parseJobRef(idText, "jobs")
		switch {
		case e != nil:
			return nil, e
		case task != nil:
			tasks = append(tasks, arrayTaskRef{id, *task})
		default:
			f.IDs = append(f.IDs, id)
		}
	}
	if in.Account != "" {
		f.Accounts = []string{in.Account}
	}
	if in.Partition != "" {
		f.Partitions = []string{in.Partition}
	}
	if in.UserName != "" {
		f.Users = []string{in.UserName}
	}
	filtered := len(f.IDs) > 0 || f.Accounts != nil || f.Partitions != nil || f.Users != nil || in.JobName != "" || in.QOS != "" || len(f.States) > 0
	if !filtered && len(tasks) == 0 {
		return nil, BadRequest(ErrRestInvalidQuery, "jobs", "name the jobs to signal (jobs, or a filter such as user_name or account)")
	}
	status := []any{}
	for _, ref := range tasks {
		status = append(status, killStatus(ref.arrayID, s.asErrorOrNil(s.signalArrayTask(c, ref, sig))))
	}
	if !filtered {
		return map[string]any{"status": status}, nil
	}
	jobs, err := changeableJobs(s, c, f)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if (in.JobName != "" && j.Desc.Name != in.JobName) || (in.QOS != "" && j.Desc.QOS != in.QOS) {
			continue
		}
		if j.ArrayJobID != 0 && j.ArrayJobID != j.ID && slices.Contains(f.IDs, j.ArrayJobID) {
			continue // signalled with its array's id
		}
		status = append(status, killStatus(j.ID, s.asErrorOrNil(s.backend.SignalJob(c.ctx, j.ID, CancelRequest{Signal: sig}))))
	}
	return map[string]any{"status": status}, nil
}

// arrayTaskRef is one ARRAYID_TASK of a kill request.
type arrayTaskRef struct {
	arrayID uint32
	task    int
}

// signalArrayTask signals one array task the caller may access.
func (s *Server) signalArrayTask(c *call, ref arrayTaskRef, sig int) error {
	j, err := s.backend.ArrayTask(c.ctx, ref.arrayID, ref.task)
	if err != nil {
		return err
	}
	if !c.id.CanAccessJob(j.Desc.User, j.Desc.Account) {
		return Forbidden("jobs", "job %d_%d belongs to %s in account %s; %s may not access it", ref.arrayID, ref.task, j.Desc.User, j.Desc.Account, c.id.User)
	}
	return s.backend.SignalJob(c.ctx, j.ID, CancelRequest{Signal: sig, ArrayTask: &ref.task})
}

func (s *Server) asErrorOrNil(err error) *Error {
	if err == nil {
		return nil
	}
	return s.asError(err)
}

func handleRequeueJob(s *Server, c *call) (map[string]any, error) {
	j, _, err := accessibleJob(s, c)
	if err != nil {
		return nil, err
	}
	// The Hold query flag requeues the job held, like scontrol requeuehold.
	q := c.r.URL.Query()
	_, hold := q["Hold"]
	hold = hold && q.Get("Hold") != "false"
	if err := s.backend.RequeueJob(c.ctx, j.ID, hold); err != nil {
		return nil, err
	}
	return map[string]any{"status": []any{map[string]any{"job_id": int64(j.ID), "step_id": "batch", "error_code": 0, "error": "", "why": ""}}}, nil
}
