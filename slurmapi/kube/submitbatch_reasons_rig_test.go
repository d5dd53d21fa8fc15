package kube

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

const (
	// fillA100Job takes every GPU of the rig's a100 partition (2 nodes x 4).
	fillA100Job = `{"script":"#!/bin/bash\n#SBATCH -J fill -p a100 -N 2 --gres=gpu:4 -t 30\nsrun hostname\n","job":{"environment":["PATH=/bin"]}}`
	oneA100Job  = `{"script":"#!/bin/bash\n#SBATCH -J one -p a100 -N 1 --gres=gpu:1 -t 30\nsrun hostname\n","job":{"environment":["PATH=/bin"]}}`
)

// TestBatchedJobTellsWhyItWaitsOnRig: a runnable job that cannot fit now (its partition's
// GPUs are all taken) stays in its batch, with no PodGroup, and job/{id} says why it waits
// as Slurm would, Resources, from the reasons the scheduler keeps on the batch. When the
// GPUs free up it starts, and the submit queue still removes its batch, which the
// scheduler wrote to meanwhile.
func TestBatchedJobTellsWhyItWaitsOnRig(t *testing.T) {
	ts, b := batchServer(t, 20*time.Millisecond)
	runKeeping(t, b, prometheus.NewRegistry(), nil)

	fill := submitAll(t, ts, 1, fillA100Job)[0]
	waitFor(t, "the job taking every a100 GPU to start", func() bool {
		pg := storedGroup(t, b, fill)
		return pg != nil && pg.Status.Phase == v1alpha1.PodGroupRunning
	})
	waiting := submitAll(t, ts, 1, oneA100Job)[0]
	var reason any
	waitFor(t, "the waiting job to be told why", func() bool {
		reason = jobOf(t, ts, waiting)["state_reason"]
		return reason != "None"
	})
	if reason != "Resources" {
		t.Errorf("the job waiting for a GPU reads reason %v, want Resources", reason)
	}
	if j := jobOf(t, ts, waiting); j["job_state"].([]any)[0] != "PENDING" {
		t.Errorf("the waiting job reads as %v", j["job_state"])
	}
	if pg := storedGroup(t, b, waiting); pg != nil {
		t.Errorf("the waiting job is a PodGroup (%s), want it kept in its batch", pg.Name)
	}
	said := false
	for _, cm := range batches(t, b) {
		if _, ok := cm.Data[fmt.Sprint(waiting)]; !ok {
			continue
		}
		waits, err := v1alpha1.ParsePendingReasons(cm.Annotations[v1alpha1.PendingReasonsAnnotation])
		if err != nil {
			t.Fatal(err)
		}
		said = waits[fmt.Sprint(waiting)].Reason == "Resources"
	}
	if !said {
		t.Error("the waiting job's batch does not say it waits for Resources")
	}

	if status, doc := call(t, ts, "alice", "DELETE", fmt.Sprintf("/slurm/v0.0.45/job/%d", fill), ""); status != http.StatusOK {
		t.Fatalf("scancel: %d %v", status, doc)
	}
	waitFor(t, "the waiting job to start", func() bool {
		pg := storedGroup(t, b, waiting)
		return pg != nil && pg.Status.Phase == v1alpha1.PodGroupRunning
	})
	waitFor(t, "its batch to be removed", func() bool {
		for _, cm := range batches(t, b) {
			if _, ok := cm.Data[fmt.Sprint(waiting)]; ok {
				return false
			}
		}
		return true
	})
}
