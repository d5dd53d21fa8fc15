package kube

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/e2e"
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

// TestStuckBatchHoldsUpNoOtherOnRig: a batched job that cannot be created
// for now (its namespace's quota allows no more PodGroups) stays visible
// as PENDING and waits, while the batches after it are created.
func TestStuckBatchHoldsUpNoOtherOnRig(t *testing.T) {
	_, b := batchServer(t, 20*time.Millisecond)
	ctx := context.Background()
	ns := Namespace("vision")
	if err := b.ensureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-more-jobs", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/podgroups.scheduling.sluice.dev": resource.MustParse("0")}},
	}
	if err := b.c.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.c.Delete(ctx, quota) })
	e2e.WaitFor(t, "the quota to be counted", time.Minute, func(ctx context.Context) (bool, error) {
		var q corev1.ResourceQuota
		err := b.c.Get(ctx, client.ObjectKeyFromObject(quota), &q)
		return err == nil && len(q.Status.Hard) > 0, err
	})
	job := func(user, account string) uint32 {
		res, err := b.Submit(ctx, &slurmapi.JobDesc{User: user, Account: account, Partition: "h100", Script: "#!/bin/bash\ntrue\n", Nodes: 1, Tasks: 1, CPUsPerTask: 1, Hold: true})
		if err != nil {
			t.Fatal(err)
		}
		return res.JobID
	}
	stuck := job("bob", "vision")
	after := job("alice", "nlp")
	t.Cleanup(func() {
		removeJobs(t, []uint32{after})
		_ = b.c.Delete(ctx, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: PodGroupName(stuck)}})
	})
	runQueue(t, b)
	e2e.WaitFor(t, "the later batch's job to be created", 2*time.Minute, func(context.Context) (bool, error) {
		return storedGroup(t, b, after) != nil, nil
	})
	j, err := b.Job(ctx, stuck)
	if err != nil || j.State[0] != "PENDING" {
		t.Errorf("the job its quota holds back: %v %v, want it PENDING", j.State, err)
	}
	if storedGroup(t, b, stuck) != nil {
		t.Errorf("job %d was created past its namespace's quota", stuck)
	}
}
