package kube

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/slurmapi"
)

// TestRefusedBatchedJobIsKeptFailedOnRig: a batched job the API server
// refuses as a PodGroup (here a name past the schema's limit, stored by
// calling the backend directly, as the REST checks refuse it up front) and
// a batch entry that does not decode are not dropped: each stays a job,
// FAILED with reason SystemFailure, in job/{id} and in the jobs list.
func TestRefusedBatchedJobIsKeptFailedOnRig(t *testing.T) {
	ts, b := batchServer(t, 20*time.Millisecond)
	ctx := context.Background()
	desc := &slurmapi.JobDesc{User: "alice", Account: "nlp", Partition: "h100", Name: strings.Repeat("n", 300),
		Script: "#!/bin/bash\ntrue\n", Nodes: 1, Tasks: 1, CPUsPerTask: 1}
	res, err := b.Submit(ctx, desc)
	if err != nil {
		t.Fatal(err)
	}
	garbled := res.JobID + 5 // an id no job took (the counter reserved a block)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: batchName(garbled), Namespace: b.opts.Namespace, Labels: map[string]string{SubmitBatchLabel: "true"}},
		Data:       map[string]string{fmt.Sprint(garbled): "{not json"},
	}
	if err := b.c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeJobs(t, []uint32{res.JobID}) })
	runQueue(t, b)
	waitMaterialized(t, b, []uint32{res.JobID, garbled})

	j := jobOf(t, ts, res.JobID)
	if state := j["job_state"].([]any); len(state) != 1 || state[0] != "FAILED" || j["state_reason"] != "SystemFailure" {
		t.Errorf("refused job: state %v reason %v, want FAILED SystemFailure", state, j["state_reason"])
	}
	if name := j["name"].(string); len(name) != slurmapi.MaxNameChars {
		t.Errorf("refused job's name is %d characters, want it cut to %d", len(name), slurmapi.MaxNameChars)
	}
	status, doc := call(t, ts, "slurm", "GET", "/slurm/v0.0.45/jobs", "")
	if status != http.StatusOK {
		t.Fatalf("jobs: %d %v", status, doc)
	}
	listed := map[float64]string{}
	for _, j := range doc["jobs"].([]any) {
		m := j.(map[string]any)
		listed[m["job_id"].(float64)] = m["job_state"].([]any)[0].(string)
	}
	for _, id := range []uint32{res.JobID, garbled} {
		if listed[float64(id)] != "FAILED" {
			t.Errorf("job %d listed as %q, want FAILED", id, listed[float64(id)])
		}
	}
}
