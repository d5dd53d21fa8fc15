package slurmapi

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// jobUpdateIn is what POST job/{job_id} reads of a job_desc_msg.
type jobUpdateIn struct {
	Hold       *bool   `json:"hold"`
	TimeLimit  NoVal   `json:"time_limit"`
	Priority   NoVal   `json:"priority"`
	Nice       NoVal   `json:"nice"`
	Comment    *string `json:"comment"`
	Name       *string `json:"name"`
	Partition  *string `json:"partition"`
	QOS        *string `json:"qos"`
	Account    *string `json:"account"`
	Dependency *string `json:"dependency"`
	Requeue    *bool   `json:"requeue"`
}

// updatableFields are the job_desc_msg fields POST job/{job_id} acts on;
// job_id may name the job again. Any other field given is refused, as an
// update that answered 200 and changed nothing would mislead.
var updatableFields = map[string]bool{
	"hold": true, "time_limit": true, "priority": true, "nice": true, "comment": true, "name": true,
	"partition": true, "qos": true, "account": true, "dependency": true, "requeue": true, "job_id": true,
}

// refuseUnknownUpdates names the first field given that no update acts on.
func refuseUnknownUpdates(body []byte) *Error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return BadRequest(ErrRestFailParsing, "body", "%s", jsonProblem(err))
	}
	var refused []string
	for name, raw := range fields {
		if !updatableFields[name] && !emptyJSON(raw) {
			refused = append(refused, name)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	sort.Strings(refused)
	return BadRequest(ErrNotSupported, refused[0], "changing %s of a job is not supported; a job update may change hold, time_limit, priority, nice, comment, name, requeue, partition, qos and dependency", strings.Join(refused, ", "))
}

func handleUpdateJob(s *Server, c *call) (map[string]any, error) {
	j, task, err := accessibleJob(s, c)
	if err != nil {
		return nil, err
	}
	if task != nil && j.ArrayTaskID == nil {
		return nil, Errorf(http.StatusConflict, ErrNotSupported, "job_id",
			"task %d of array %d has not been split off the array yet; change the array (%d) instead", *task, j.ID, j.ID)
	}
	body, e := readBody(c)
	if e != nil {
		return nil, e
	}
	var in jobUpdateIn
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, BadRequest(ErrRestFailParsing, "body", "%s", jsonProblem(err))
	}
	if e := refuseUnknownUpdates(body); e != nil {
		return nil, e
	}
	// requeue is scontrol update Requeue=0|1: whether a node failure or preemption
	// requeues the job, changeable at any time as in Slurm. (It was once taken for an
	// empty field and answered 200 with nothing changed.)
	u := JobUpdate{Hold: in.Hold, Comment: in.Comment, Name: in.Name, Requeue: in.Requeue}
	if in.Name != nil {
		if e := checkText("name", *in.Name, MaxNameChars, false); e != nil {
			return nil, e
		}
	}
	if in.Comment != nil {
		if e := checkText("comment", *in.Comment, MaxCommentChars, true); e != nil {
			return nil, e
		}
	}
	limit, e := timeLimit(in.TimeLimit, "time_limit")
	if e != nil && in.TimeLimit.Set {
		return nil, e
	}
	if in.TimeLimit.Set && limit != 0 { // NO_VAL leaves the limit as it is
		// As in Slurm, only operators may raise a limit.
		if !c.id.IsOperator() && (limit < 0 || (j.Desc.TimeLimit > 0 && limit > j.Desc.TimeLimit)) {
			return nil, Forbidden("time_limit", "only operators may raise a job's time limit")
		}
		u.TimeLimit = &limit
	}
	if p, ok := in.Priority.Value(); ok {
		if !c.id.IsOperator() {
			return nil, Forbidden("priority", "only operators and administrators may set a job's priority; a user may lower their own job's standing with nice")
		}
		u.Priority = &p
	}
	if n, ok := in.Nice.Value(); ok {
		if e := authorizeNiceUpdate(c.id, j.Desc.Nice, n); e != nil {
			return nil, e
		}
		u.Nice = &n
	}
	if e := s.pendingChanges(c, j, in, &u); e != nil {
		return nil, e
	}
	if err := s.backend.UpdateJob(c.ctx, j.ID, u); err != nil {
		return nil, err
	}
	return map[string]any{
		"results":             []any{map[string]any{"job_id": int64(j.ID), "step_id": "batch", "error_code": 0, "error": "", "why": ""}},
		"job_id":              strconv.FormatUint(uint64(j.ID), 10),
		"step_id":             "batch",
		"job_submit_user_msg": "",
	}, nil
}

// pendingChanges checks the changes Slurm allows only while a job is
// pending (partition, QOS, account, dependency) against the site's
// catalogue, as a submission with them would be checked for the job's
// owner, and adds them to u.
func (s *Server) pendingChanges(c *call, j Job, in jobUpdateIn, u *JobUpdate) *Error {
	changed := func(v *string, current string) bool { return v != nil && *v != current }
	if !changed(in.Partition, j.Desc.Partition) && !changed(in.QOS, j.Desc.QOS) &&
		!changed(in.Account, j.Desc.Account) && !changed(in.Dependency, j.Desc.Dependency) {
		return nil
	}
	if j.Manifest {
		return Errorf(http.StatusConflict, ErrNotSupported, "job_id", "job %d came in as a Kubernetes manifest; change its partition, QOS or dependency in the manifest", j.ID)
	}
	if len(j.State) == 0 || j.State[0] != "PENDING" {
		return Errorf(http.StatusConflict, ErrJobNotPending, "job_id", "job %d is %s; its partition, QOS, account and dependency change only while it is pending", j.ID, strings.Join(j.State, ","))
	}
	if changed(in.Account, j.Desc.Account) {
		// The account is the namespace of the job's objects, which
		// Kubernetes cannot move.
		return BadRequest(ErrInvalidAccount, "account", "job %d's account cannot change from %s to %s: the account decides the namespace the job's objects live in; cancel the job and submit it again with --account=%s", j.ID, j.Desc.Account, *in.Account, *in.Account)
	}
	if changed(in.Dependency, j.Desc.Dependency) {
		if e := checkText("dependency", *in.Dependency, MaxDependencyChars, false); e != nil {
			return e
		}
		if e := s.asErrorOrNil(s.dependenciesExist(c.ctx, "dependency", *in.Dependency)); e != nil {
			return e
		}
		u.Dependency = in.Dependency
	}
	if !changed(in.Partition, j.Desc.Partition) && !changed(in.QOS, j.Desc.QOS) {
		return nil
	}
	cat, err := s.backend.Catalog(c.ctx)
	if err != nil {
		return Errorf(http.StatusServiceUnavailable, ErrControllerDown, "job_id", "the site's partitions and QOS could not be read: %v", err)
	}
	d := j.Desc
	if changed(in.Partition, j.Desc.Partition) {
		d.Partition = *in.Partition
	}
	if changed(in.QOS, j.Desc.QOS) {
		d.QOS = *in.QOS
	}
	if e := cat.resolve(&d); e != nil {
		return e
	}
	// What resolve settled, defaults included ("" is the default).
	if d.Partition != j.Desc.Partition {
		u.Partition = &d.Partition
	}
	if d.QOS != j.Desc.QOS {
		u.QOS = &d.QOS
	}
	if j.Desc.TimeLimit == sbatch.Unlimited && d.TimeLimit != sbatch.Unlimited && u.TimeLimit == nil {
		u.TimeLimit = &d.TimeLimit // the new partition's MaxTime
	}
	return nil
}
