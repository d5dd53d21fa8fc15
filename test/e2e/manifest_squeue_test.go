package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// TestManifestJobInSqueue: a batch/v1 Job written for Kubernetes (schedulerName sluice,
// a queue label, two 1-GPU pods) shows in squeue beside Slurm jobs: the pod grouper
// gives its PodGroup a job id from the same counter as sbatch, and the REST view reads
// it RUNNING while its pods run and COMPLETED when they succeeded, though the scheduler
// writes no status for a group it places at once.
func TestManifestJobInSqueue(t *testing.T) {
	ts := slurmSite(t)
	rig := Rig(t)
	ns := TeamNamespace(t, rig, "nlp") // the site's nlp queue admits it
	job := gpuJob("finetune", 10*time.Second, 0)
	two := int32(2)
	job.Spec.Parallelism, job.Spec.Completions = &two, &two
	job.Spec.Template.Labels = map[string]string{v1alpha1.QueueLabel: "nlp"}
	job.Spec.Template.Spec.SchedulerName = v1alpha1.DefaultSchedulerName
	if _, err := rig.Client().BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// squeue as an operator: the manifest job is the one named after its namespace.
	find := func() (map[string]any, error) {
		status, doc := slurmCall(t, ts, "slurm", "GET", "/slurm/v0.0.44/jobs", "")
		if status != http.StatusOK {
			return nil, fmt.Errorf("jobs: %d %v", status, doc)
		}
		for _, j := range doc["jobs"].([]any) {
			if j := j.(map[string]any); strings.HasPrefix(fmt.Sprint(j["name"]), ns+"/") {
				return j, nil
			}
		}
		return nil, fmt.Errorf("no job named %s/... in squeue", ns)
	}
	var running map[string]any
	WaitFor(t, "the manifest Job RUNNING in squeue", time.Minute, func(context.Context) (bool, error) {
		j, err := find()
		if err != nil {
			return false, err
		}
		running = j
		return j["job_state"].([]any)[0] == "RUNNING", fmt.Errorf("state %v", j["job_state"])
	})
	id := int(running["job_id"].(float64))
	if id <= 0 || running["account"] != "nlp" || running["user_name"] != "ns:"+ns || strings.Count(fmt.Sprint(running["nodes"]), ",")+strings.Count(fmt.Sprint(running["nodes"]), "-") < 1 {
		t.Errorf("running manifest job: id %d, account %v, nodes %v; user %v; want an id, account nlp, two nodes, user ns:%s (the namespace's principal, as the ledger records it)", id, running["account"], running["nodes"], running["user_name"], ns)
	}
	// The same id answers job/{id}, as for a Slurm job.
	WaitFor(t, fmt.Sprintf("manifest job %d COMPLETED", id), time.Minute, func(context.Context) (bool, error) {
		status, doc := slurmCall(t, ts, "slurm", "GET", fmt.Sprintf("/slurm/v0.0.44/job/%d", id), "")
		if status != http.StatusOK {
			return false, fmt.Errorf("job %d: %d %v", id, status, doc)
		}
		state := doc["jobs"].([]any)[0].(map[string]any)["job_state"].([]any)[0]
		return state == "COMPLETED", fmt.Errorf("state %v", state)
	})
}
