package tenancy

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi"
)

// splitAhead is how many tasks the lifecycle splits off a pending array
// before any starts (slurmapi/kube arraySplitAhead): the most ids an array
// can have taken beyond its own by the time it is cancelled here.
const splitAhead = 4

// TestArraysCostTheIDsOfTheirSplitTasks: issue 35's id exhaustion. An
// array takes one id at submit, as in Slurm, and its tasks theirs only
// when they are split off: "0-1000" submitted and cancelled costs its own
// id (held, so nothing is split: exactly one) and at most the few split
// ahead, not 1001; "5,5,5,..." is one task under the array's own id; an
// index at or past MaxArraySize is refused with Slurm's error naming the
// limit, taking no id.
func TestArraysCostTheIDsOfTheirSplitTasks(t *testing.T) {
	s := siteFor(t)
	before := jobID(t, s.submitOK(t, alice, nil))
	held := s.submitOK(t, alice, map[string]any{"array": "0-1000", "hold": true})
	if id := jobID(t, held); id != before+1 {
		t.Errorf("the array took id %d after job %d: a submission takes one id", id, before)
	}
	s.cancel(t, alice, held)
	if next := jobID(t, s.submitOK(t, alice, nil)); next != jobID(t, held)+1 {
		t.Errorf("held array 0-1000 (job %s) cancelled took %d ids besides its own, want none", held, next-jobID(t, held)-1)
	}

	// Tasks that start let more be split (the rig has room for them), so the bound is the
	// few split ahead plus one per task that started before the cancel.
	array := s.submitOK(t, alice, map[string]any{"array": "0-1000"})
	s.cancel(t, alice, array)
	after := jobID(t, s.submitOK(t, alice, nil))
	started := uint64(0)
	for _, j := range s.jobs(t, operatorUser) {
		if formatID(number(j["array_job_id"])) == array && formatID(number(j["job_id"])) != array && number(j["start_time"]) > 0 {
			started++
		}
	}
	spent := after - jobID(t, array) - 1
	t.Logf("array 0-1000 cancelled while pending: %d ids besides its own, %d of them tasks that started", spent, started)
	if spent > splitAhead+started {
		t.Errorf("array 0-1000 cancelled while pending took %d ids besides its own (job %s, next job %d), %d of them tasks that started; want at most %d more",
			spent, array, after, started, splitAhead)
	}

	repeated := s.submitOK(t, alice, map[string]any{"array": strings.TrimSuffix(strings.Repeat("5,", 10), ",")})
	// Pending, the record is the array with task string "5", or, once the lifecycle has
	// split its one task off, task 5 itself under the array's id.
	if j := s.job(t, repeated); state(j) == "PENDING" && j["array_task_string"] != "5" && number(j["array_task_id"]) != 5 {
		t.Errorf("array 5,5,...,5 pends with tasks %v (task id %v), want the one task 5", j["array_task_string"], j["array_task_id"])
	}
	if next := jobID(t, s.submitOK(t, alice, nil)); next != jobID(t, repeated)+1 {
		t.Errorf("array 5,5,...,5 (job %s) took %d ids besides its own, want none: it is one task, the array's record",
			repeated, next-jobID(t, repeated)-1)
	}

	last := jobID(t, s.submitOK(t, alice, nil))
	for _, spec := range []string{"0-1001", "1001", "0-4000000:1000"} {
		r := s.submit(t, alice, map[string]any{"array": spec})
		e := r.requireRefused(t, http.StatusBadRequest, slurmapi.ErrInvalidArray)
		if e.Error != "Invalid job array specification" || !strings.Contains(e.Description, "MaxArraySize 1001") {
			t.Errorf("array %s refused as %+v, want Slurm's error naming MaxArraySize 1001", spec, e)
		}
	}
	if next := jobID(t, s.submitOK(t, alice, nil)); next != last+1 {
		t.Errorf("the refused arrays took %d ids", next-last-1)
	}
}

// cancel is scancel of job id as user, tried again while the answer is 409
// (a task the scheduler is starting changed under the cancel, twice), as
// the answer asks; a retry that finds every task ended finished the work.
func (s *site) cancel(t *testing.T, user, id string) {
	t.Helper()
	for try := 0; ; try++ {
		r := s.del(t, user, api+"/job/"+id)
		if try > 0 && r.status == http.StatusConflict && slices.ContainsFunc(r.errors(), func(e slurmError) bool { return e.Number == slurmapi.ErrAlreadyDone }) {
			return
		}
		if r.status != http.StatusConflict || try == 4 {
			r.requireOK(t)
			return
		}
	}
}
