package kube

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A job waiting in its batch reads, wherever the job model is asked (squeue, job/{id},
// scontrol), the reason the scheduler put on its batch; held reads JobHeldUser from its
// spec whatever the batch says; a job the batch does not list, or a batch whose reasons do
// not parse, reads None.
func TestBatchedJobsReadTheirBatchsReasons(t *testing.T) {
	job := func(id string, hold bool) string {
		pg := v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "slurm-nlp", Name: "job-" + id,
			Labels: map[string]string{v1alpha1.JobIDLabel: id}},
			Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "nlp", Slurm: &v1alpha1.SlurmJob{User: "alice", Hold: hold}}}
		b, err := json.Marshal(pg)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	data := map[string]string{"41": job("41", false), "42": job("42", true), "43": job("43", false), "44": job("44", false)}
	said := v1alpha1.FormatPendingReasons(map[string]v1alpha1.BatchedWait{
		"41": {Reason: "Resources", Message: "needs 1 GPU in partition h100; no node has that free now"},
		"42": {Reason: "Resources"},
		"44": {Reason: "Priority"},
	})
	for _, tc := range []struct {
		name  string
		value string
		id    uint32
		want  map[string]string // job id -> Slurm reason
	}{
		{name: "reasons on the batch", value: said,
			want: map[string]string{"41": "Resources", "42": "JobHeldUser", "43": "None", "44": "Priority"}},
		{name: "one job asked for", value: said, id: 44, want: map[string]string{"44": "Priority"}},
		{name: "no reasons yet", want: map[string]string{"41": "None", "42": "JobHeldUser", "43": "None", "44": "None"}},
		{name: "reasons that do not parse", value: "[{",
			want: map[string]string{"41": "None", "42": "JobHeldUser", "43": "None", "44": "None"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "submit-batch-41"}, Data: data}
			if tc.value != "" {
				cm.Annotations = map[string]string{v1alpha1.PendingReasonsAnnotation: tc.value}
			}
			got := map[string]string{}
			for _, pg := range batchedJobs(context.Background(), cm, tc.id) {
				if !jobstate.IsBatched(&pg) {
					t.Errorf("job %s does not read as batched", pg.Name)
				}
				got[pg.Labels[v1alpha1.JobIDLabel]] = jobstate.PendingReason(&pg, time.Now())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("read %v, want %v", got, tc.want)
			}
			for id, reason := range tc.want {
				if got[id] != reason {
					t.Errorf("job %s reads %q, want %q", id, got[id], reason)
				}
			}
		})
	}
}
