package kube

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestUsedUpSlurmIDsAnswer429OnRig: with the counter (in a namespace of its
// own, so the package's other tests keep theirs) at the Slurm ceiling, the
// submission that takes the last Slurm id succeeds, the next is refused
// with 429 and slurmctld's EAGAIN, storing nothing, and a Kubernetes
// workload still gets an id from the reserve above.
func TestUsedUpSlurmIDsAnswer429OnRig(t *testing.T) {
	const ns = "jobids-full"
	cfg := e2e.Rig(t).RESTConfig()
	ts, b := rigServerWith(t, cfg, Options{Namespace: ns, IDBlock: 10})
	ctx := context.Background()
	if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	counter := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sluice-job-ids"},
		Data: map[string]string{counterKey: strconv.FormatUint(uint64(DefaultMaxSlurmJobID), 10)}}
	if err := b.c.Create(ctx, counter); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.c.Delete(context.Background(), counter)
		_ = b.c.DeleteAllOf(context.Background(), &v1alpha1.PodGroup{}, client.InNamespace(Namespace("nlp")), client.HasLabels{v1alpha1.JobIDLabel})
	})

	const job = `{"script":"#!/bin/bash\n#SBATCH -p h100\ntrue\n","job":{"account":"nlp","environment":["PATH=/bin"]}}`
	status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.44/job/submit", job)
	if status != http.StatusOK || uint32(doc["job_id"].(float64)) != DefaultMaxSlurmJobID {
		t.Fatalf("the submission taking the last Slurm id: %d %v, want job %d", status, doc, DefaultMaxSlurmJobID)
	}
	before, err := b.Jobs(ctx, slurmapi.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	status, doc = call(t, ts, "alice", "POST", "/slurm/v0.0.44/job/submit", job)
	errs, _ := doc["errors"].([]any)
	if status != http.StatusTooManyRequests || len(errs) == 0 {
		t.Fatalf("a submission past the Slurm ceiling: %d %v, want 429", status, doc)
	}
	if e := errs[0].(map[string]any); e["error_number"] != float64(slurmapi.ErrAgain) || e["error"] != "Resource temporarily unavailable" {
		t.Errorf("the refusal's entry %v, want error 11, Resource temporarily unavailable", e)
	}
	if after, err := b.Jobs(ctx, slurmapi.JobFilter{}); err != nil || len(after) != len(before) {
		t.Errorf("the refused submission changed the jobs from %d to %d (%v)", len(before), len(after), err)
	}
	if id, err := b.JobIDs().Next(ctx); err != nil || id <= DefaultMaxSlurmJobID {
		t.Errorf("a Kubernetes workload's id past the Slurm ceiling: %d (%v), want one from the reserve", id, err)
	}
}
