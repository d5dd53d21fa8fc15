package kube

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestBeginTimeOnRig: a job submitted with a begin_time a few seconds
// ahead shows reason BeginTime, is neither RUNNING nor given a pod before
// that time while the scheduler runs, and then completes.
func TestBeginTimeOnRig(t *testing.T) {
	ts, b := rigServer(t)
	runSite(t, b)
	begin := time.Now().Add(4 * time.Second).Truncate(time.Second)
	body := fmt.Sprintf(`{"script":"#!/bin/bash\n#SBATCH -p h100 --gres=gpu:1\ntrue\n","job":{"account":"nlp","begin_time":%d,"environment":["PATH=/bin","SLUICE_SIM_DURATION=1s"]}}`, begin.Unix())
	status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.45/job/submit", body)
	if status != http.StatusOK {
		t.Fatalf("submit: %d %v", status, doc)
	}
	id := uint32(doc["job_id"].(float64))
	job := func() map[string]any {
		jobs := arrayJobs(t, ts, id)
		return jobs[0]
	}
	if j := job(); j["job_state"].([]any)[0] != "PENDING" || j["state_reason"] != "BeginTime" || number(j["eligible_time"]) != int(begin.Unix()) {
		t.Errorf("before its begin time: %v %v eligible %v", j["job_state"], j["state_reason"], j["eligible_time"])
	}
	var created time.Time
	e2e.WaitFor(t, "the job COMPLETED", 60*time.Second, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := b.c.List(ctx, &pods, client.InNamespace(Namespace("nlp")), client.MatchingLabels{v1alpha1.JobIDLabel: fmt.Sprint(id)}); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			created = p.CreationTimestamp.Time
		}
		j := job()
		if s := j["job_state"].([]any)[0]; (s == "RUNNING" || s == "COMPLETED") && int64(number(j["start_time"])) < begin.Unix() {
			t.Errorf("%s with start time %v, before its begin time %d", s, j["start_time"], begin.Unix())
		}
		return j["job_state"].([]any)[0] == "COMPLETED", fmt.Errorf("job is %v (%v)", j["job_state"], j["state_reason"])
	})
	if created.IsZero() || created.Before(begin) {
		t.Errorf("the job's pod was created at %v, want at or after its begin time %v", created, begin)
	}
}
