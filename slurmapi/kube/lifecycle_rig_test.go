package kube

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestLifecycleMarksDependencies runs the lifecycle controller on the rig:
// a job waiting on afterok of a pending job is marked not Eligible (and
// squeue shows reason Dependency); when that job succeeds it turns
// Eligible at once.
func TestLifecycleMarksDependencies(t *testing.T) {
	_, b := rigServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	life, err := NewLifecycle(e2e.Rig(t).RESTConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- life.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("lifecycle: %v", err)
		}
	})
	submit := func(dependency string) *v1alpha1.PodGroup {
		t.Helper()
		res, err := b.Submit(ctx, &slurmapi.JobDesc{User: "alice", Account: "nlp", Partition: "h100", Script: "#!/bin/bash\ntrue\n",
			Nodes: 1, Tasks: 1, CPUsPerTask: 1, Dependency: dependency})
		if err != nil {
			t.Fatal(err)
		}
		pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "slurm-nlp", Name: PodGroupName(res.JobID)}}
		t.Cleanup(func() { _ = b.c.Delete(context.Background(), pg) })
		return pg
	}
	first := submit("")
	after := submit(fmt.Sprintf("afterok:%s", first.Name[len("job-"):]))
	eligible := func(want metav1.ConditionStatus, reason string) {
		t.Helper()
		e2e.WaitFor(t, fmt.Sprintf("%s Eligible=%s (%s)", after.Name, want, reason), 30*time.Second, func(ctx context.Context) (bool, error) {
			if err := b.c.Get(ctx, client.ObjectKeyFromObject(after), after); err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(after.Status.Conditions, ConditionEligible)
			return c != nil && c.Status == want && c.Reason == reason, fmt.Errorf("conditions %+v", after.Status.Conditions)
		})
	}
	eligible(metav1.ConditionFalse, "Dependency")
	if j, err := JobFromPodGroup(after); err != nil || j.Reason != "Dependency" {
		t.Errorf("squeue reason %q (%v), want Dependency", j.Reason, err)
	}
	if err := b.c.Get(ctx, client.ObjectKeyFromObject(first), first); err != nil {
		t.Fatal(err)
	}
	first.Status.Phase = v1alpha1.PodGroupSucceeded
	if err := b.c.Status().Update(ctx, first); err != nil {
		t.Fatal(err)
	}
	eligible(metav1.ConditionTrue, "DependencySatisfied")
}
