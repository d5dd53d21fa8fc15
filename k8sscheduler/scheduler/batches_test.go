package scheduler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func batchedJob(name, rv string) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "slurm-nlp", Name: name, ResourceVersion: rv},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1, Slurm: &v1alpha1.SlurmJob{User: "alice"}}}
}

// A job read from a batch is a group until its batch goes; once its PodGroup was stored,
// the batch's copy never stands for it again, even after the PodGroup is deleted (nothing
// brings back a job that started).
func TestBatchedJobsInTheCache(t *testing.T) {
	c := newCache()
	key := "slurm-nlp/job-1"
	c.setBatch("b1", []*v1alpha1.PodGroup{batchedJob("job-1", ""), batchedJob("job-2", "")})
	if g := c.groups[key]; g == nil || !g.batched() {
		t.Fatalf("a batched job is not a batched group: %+v", g)
	}
	c.setPodGroup(batchedJob("job-1", "7"))
	if g := c.groups[key]; g.batched() || g.pg.ResourceVersion != "7" {
		t.Fatalf("the stored PodGroup does not replace the batch's copy: %+v", g.pg)
	}
	c.setBatch("b1", []*v1alpha1.PodGroup{batchedJob("job-1", ""), batchedJob("job-2", "")}) // a resync
	c.deletePodGroup(key)
	if g := c.groups[key]; g == nil || g.pg != nil {
		t.Fatalf("a deleted stored job came back from its batch: %+v", g)
	}
	c.setBatch("b1", nil)
	if _, ok := c.groups[key]; ok {
		t.Error("a stored job's entry outlived its batch")
	}
	if _, ok := c.groups["slurm-nlp/job-2"]; ok {
		t.Error("a job never stored outlived its batch")
	}
}
