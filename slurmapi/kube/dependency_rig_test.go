package kube

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestDependencyOnManifestJobOnRig: a Slurm job's --dependency on a manifest job (here a
// bare pod, which has no PodGroup object at all) is judged by the job model's state of
// that job, as squeue shows it: afterok on one that completes turns Eligible, afterok on
// one that fails is DependencyNeverSatisfied (squeue's reason too), afternotok on it is
// satisfied. The lifecycle reads a shared cache of every pod, as in sluice server, and is
// woken by the manifest pods' changes.
func TestDependencyOnManifestJobOnRig(t *testing.T) {
	_, b := rigServer(t)
	ctx := context.Background()
	runSharedLifecycle(t)

	ns := groupOfOneNamespace(t, b)
	node := firstNode(t, b)
	manifest := func(exitCode int) uint32 {
		t.Helper()
		id, err := b.JobIDs().Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pod := admittedBarePod(ns.Name, id)
		maps.Copy(pod.Annotations, cluster.SimulatedRun(2*time.Second, exitCode))
		createPod(t, b, pod)
		t.Cleanup(func() { _ = b.c.Delete(context.Background(), pod) })
		bind(t, b, pod, node)
		return id
	}
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
	eligible := func(pg *v1alpha1.PodGroup, want metav1.ConditionStatus, reason string) {
		t.Helper()
		e2e.WaitFor(t, fmt.Sprintf("%s Eligible=%s (%s)", pg.Name, want, reason), 60*time.Second, func(ctx context.Context) (bool, error) {
			if err := b.c.Get(ctx, client.ObjectKeyFromObject(pg), pg); err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(pg.Status.Conditions, ConditionEligible)
			return c != nil && c.Status == want && c.Reason == reason, fmt.Errorf("conditions %+v", pg.Status.Conditions)
		})
	}

	ok, failing := manifest(0), manifest(3)
	afterOK := submit(fmt.Sprintf("afterok:%d", ok))
	afterFailed := submit(fmt.Sprintf("afterok:%d", failing))
	afterNotOK := submit(fmt.Sprintf("afternotok:%d", failing))
	// While the manifest jobs run, the Slurm jobs wait on them (the pods run 2 s; a
	// loaded machine may have ended them already, which the waits below allow for).
	eligible(afterOK, metav1.ConditionTrue, "DependencySatisfied")
	eligible(afterFailed, metav1.ConditionFalse, "DependencyNeverSatisfied")
	eligible(afterNotOK, metav1.ConditionTrue, "DependencySatisfied")

	for id, state := range map[uint32]string{ok: "COMPLETED", failing: "FAILED"} {
		if j, err := b.Job(ctx, id); err != nil || j.State[0] != state {
			t.Errorf("manifest job %d: %v (%v), want %s", id, j.State, err, state)
		}
	}
	if j, err := JobFromPodGroup(afterFailed); err != nil || j.Reason != "DependencyNeverSatisfied" {
		t.Errorf("squeue reason of the job after a failed one: %q (%v), want DependencyNeverSatisfied", j.Reason, err)
	}
}

// runSharedLifecycle runs a lifecycle on a shared informer cache of every pod and
// PodGroup, as sluice server does, until the test ends.
func runSharedLifecycle(t *testing.T) {
	t.Helper()
	cfg := e2e.Rig(t).RESTConfig()
	ctx, cancel := context.WithCancel(context.Background())
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	shared, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	life, err := NewLifecycle(cfg, shared)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- shared.Start(ctx) }()
	go func() { done <- life.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("lifecycle or its cache: %v", err)
			}
		}
	})
}
