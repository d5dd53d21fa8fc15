package e2e

import (
	"fmt"
	"net/http"
	"testing"
)

// Without PrivateData (Slurm's default) every user sees the whole queue, to know where
// they stand, and changes only their own jobs: bob reads alice's held job in job/{id}
// and in jobs, and his cancel of it, alone or through a filter, changes nothing.
func TestEveryoneSeesTheQueueButChangesOnlyTheirOwn(t *testing.T) {
	ts := slurmSite(t)
	id := submit(t, ts, "#!/bin/bash\n#SBATCH -H -N 1\ntrue\n", nil, "")
	path := fmt.Sprintf("/slurm/v0.0.45/job/%d", id)

	status, doc := slurmCall(t, ts, "bob", "GET", path, "")
	jobs, _ := doc["jobs"].([]any)
	if status != http.StatusOK || len(jobs) != 1 || jobs[0].(map[string]any)["user_name"] != "alice" {
		t.Fatalf("bob reading alice's job %d: %d %v", id, status, doc)
	}
	_, doc = slurmCall(t, ts, "bob", "GET", "/slurm/v0.0.45/jobs", "")
	listed := false
	for _, j := range doc["jobs"].([]any) {
		listed = listed || int(j.(map[string]any)["job_id"].(float64)) == id
	}
	if !listed {
		t.Errorf("bob's squeue leaves out alice's job %d", id)
	}
	if status, doc := slurmCall(t, ts, "bob", "DELETE", path, ""); status != http.StatusForbidden {
		t.Errorf("bob cancelling alice's job: %d %v, want 403", status, doc)
	}
	if status, doc := slurmCall(t, ts, "bob", "DELETE", "/slurm/v0.0.45/jobs", `{"account":"nlp"}`); status != http.StatusOK {
		t.Errorf("bob cancelling account nlp's jobs: %d %v", status, doc)
	}
	if j := showJob(t, ts, id); j.state != "PENDING" {
		t.Errorf("after bob's tries alice's job is %+v, want it still pending", j)
	}
}
