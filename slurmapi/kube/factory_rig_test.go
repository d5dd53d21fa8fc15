package kube

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestFactoryHoldsBackIneligibleJobs stores real jobs and asks
// the factory for their pods: a held job and one whose afterok dependency
// has not succeeded get none, with Slurm's reason; once the dependency
// succeeds the dependent job gets its pod, with the partition's image.
func TestFactoryHoldsBackIneligibleJobs(t *testing.T) {
	_, b := rigServer(t)
	ctx := context.Background()
	f, err := NewPodFactory(e2e.Rig(t).RESTConfig(), PodOptions{})
	if err != nil {
		t.Fatal(err)
	}
	submitAs := func(hold bool, dependency string) uint32 {
		t.Helper()
		res, err := b.Submit(ctx, &slurmapi.JobDesc{User: "alice", Account: "nlp", Partition: "h100", Script: "#!/bin/bash\ntrue\n",
			Nodes: 1, Tasks: 1, CPUsPerTask: 1, Hold: hold, Dependency: dependency})
		if err != nil {
			t.Fatal(err)
		}
		return res.JobID
	}
	load := func(id uint32) *v1alpha1.PodGroup {
		t.Helper()
		var pg v1alpha1.PodGroup
		if err := b.c.Get(ctx, client.ObjectKey{Namespace: "slurm-nlp", Name: PodGroupName(id)}, &pg); err != nil {
			t.Fatal(err)
		}
		return &pg
	}
	held := submitAs(true, "")
	first := submitAs(false, "")
	after := submitAs(false, fmt.Sprintf("afterok:%d", first))
	t.Cleanup(func() {
		for _, id := range []uint32{held, first, after} {
			_ = b.c.Delete(ctx, load(id))
		}
	})
	binds := []bridge.Bind{{Node: "h100-0", Group: memberName}}

	for id, reason := range map[uint32]string{held: "JobHeldUser", after: "Dependency"} {
		_, err := f.Pods(load(id), binds)
		var ne *NotEligible
		if !errors.As(err, &ne) || ne.Reason != reason {
			t.Errorf("job %d: factory answered %v, want NotEligible %s", id, err, reason)
		}
	}

	pg := load(first)
	pg.Status.Phase = v1alpha1.PodGroupSucceeded
	if err := b.c.Status().Update(ctx, pg); err != nil {
		t.Fatal(err)
	}
	pods, err := f.Pods(load(after), binds)
	if err != nil {
		t.Fatalf("job %d after its dependency succeeded: %v", after, err)
	}
	if img := pods[0].Spec.Containers[0].Image; img != "nvcr.io/nvidia/pytorch:25.01-py3" {
		t.Errorf("image %q, want the h100 partition's default", img)
	}
	if d := pods[0].Spec.ActiveDeadlineSeconds; d == nil || *d != 3600 {
		t.Errorf("deadline %v, want the partition's default time (1h)", d)
	}
}
