package kube

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/launch"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestFactoryGivesMultiNodeJobsALaunchKey: starting a two-node job
// creates its launch key Secret (owned by the job, so it goes with it) and
// the Service; both pods run the launcher from the init container and
// mount that Secret; a one-node job gets no Secret and mounts none.
func TestFactoryGivesMultiNodeJobsALaunchKey(t *testing.T) {
	_, b := rigServer(t)
	ctx := context.Background()
	f, err := NewPodFactory(e2e.Rig(t).RESTConfig(), PodOptions{LauncherImage: testLauncherImage})
	if err != nil {
		t.Fatal(err)
	}
	load := func(nodes int) *v1alpha1.PodGroup {
		t.Helper()
		res, err := b.Submit(ctx, &slurmapi.JobDesc{User: "alice", Account: "nlp", Partition: "h100", Script: "#!/bin/bash\nsrun hostname\n",
			Nodes: nodes, Tasks: nodes, CPUsPerTask: 1})
		if err != nil {
			t.Fatal(err)
		}
		var pg v1alpha1.PodGroup
		if err := b.c.Get(ctx, client.ObjectKey{Namespace: "slurm-nlp", Name: PodGroupName(res.JobID)}, &pg); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.c.Delete(ctx, &pg) })
		return &pg
	}
	two, one := load(2), load(1)
	pods, err := f.Pods(two, []bridge.Bind{{Node: "h100-0", Group: memberName}, {Node: "h100-1", Group: memberName}})
	if err != nil {
		t.Fatal(err)
	}
	twoKey := LaunchKey(f.opts.LaunchKeySeed, two)
	var sec corev1.Secret
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: "slurm-nlp", Name: LaunchSecretName(two, twoKey)}, &sec); err != nil {
		t.Fatalf("launch key Secret: %v", err)
	}
	if len(sec.Data[LaunchKeyField]) < 32 || len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != two.UID {
		t.Errorf("Secret %s: %d key bytes, owners %v; want a key owned by the job's PodGroup", sec.Name, len(sec.Data[LaunchKeyField]), sec.OwnerReferences)
	}
	var svc corev1.Service
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: "slurm-nlp", Name: JobServiceName(two)}, &svc); err != nil {
		t.Errorf("the job's headless Service: %v", err)
	} else if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.OwnerReferences) != 1 || svc.OwnerReferences[0].UID != two.UID ||
		svc.Spec.Selector[v1alpha1.JobIDLabel] != two.Labels[v1alpha1.JobIDLabel] {
		t.Errorf("Service %s: clusterIP %q owners %v selector %v; want headless, owned by the job's PodGroup, selecting its pods",
			svc.Name, svc.Spec.ClusterIP, svc.OwnerReferences, svc.Spec.Selector)
	}
	for _, p := range pods {
		checkLauncher(t, p, LaunchSecretName(two, twoKey))
	}
	// The key is made once: a second start (a requeued run) reuses it.
	if _, err := f.Pods(two, []bridge.Bind{{Node: "h100-0", Group: memberName}, {Node: "h100-1", Group: memberName}}); err != nil {
		t.Fatalf("second start: %v", err)
	}
	var again corev1.Secret
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: "slurm-nlp", Name: LaunchSecretName(two, twoKey)}, &again); err != nil || string(again.Data[LaunchKeyField]) != string(sec.Data[LaunchKeyField]) {
		t.Errorf("the key changed on a second start (%v)", err)
	}
	// The server's token key rotated: the next run (a requeue) derives
	// another key and gets a Secret of its own, which every one of its
	// pods mounts and whose fingerprint they carry; the Secret (immutable)
	// of the earlier runs is not what they read.
	rotated, err := NewPodFactory(e2e.Rig(t).RESTConfig(), PodOptions{LauncherImage: testLauncherImage, LaunchKeySeed: []byte("a-rotated-token-key-0123456789ab")})
	if err != nil {
		t.Fatal(err)
	}
	requeued, err := rotated.Pods(two, []bridge.Bind{{Node: "h100-0", Group: memberName}, {Node: "h100-1", Group: memberName}})
	if err != nil {
		t.Fatalf("start after the rotation: %v", err)
	}
	newKey := LaunchKey(rotated.opts.LaunchKeySeed, two)
	var fresh corev1.Secret
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: "slurm-nlp", Name: LaunchSecretName(two, newKey)}, &fresh); err != nil || string(fresh.Data[LaunchKeyField]) != newKey {
		t.Fatalf("after the rotation the run's Secret %s holds %q (%v), want the key derived under the new token key", LaunchSecretName(two, newKey), fresh.Data[LaunchKeyField], err)
	}
	for _, p := range requeued {
		checkLauncher(t, p, LaunchSecretName(two, newKey))
		if fp := podKeySHA256(p); fp != launchKeySHA256(newKey) {
			t.Errorf("pod %s carries fingerprint %q, not its Secret's key's", p.Name, fp)
		}
	}
	single, err := f.Pods(one, []bridge.Bind{{Node: "h100-0", Group: memberName}})
	if err != nil {
		t.Fatal(err)
	}
	checkLauncher(t, single[0], "")
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: "slurm-nlp", Name: LaunchSecretName(one, LaunchKey(f.opts.LaunchKeySeed, one))}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a one-node job got a launch key Secret (%v)", err)
	}
	// A Secret planted under a job's name before the job starts is not
	// the job's key: the pods' fingerprint names the derived key, so the
	// launchers refuse the planted one (slurmapi/launch).
	third := load(2)
	planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: LaunchSecretName(third, LaunchKey(f.opts.LaunchKeySeed, third)), Namespace: third.Namespace},
		Data: map[string][]byte{LaunchKeyField: []byte("a-key-the-tenant-knows-0123456789")}}
	if err := b.c.Create(ctx, planted); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.c.Delete(ctx, planted) })
	pods, err = f.Pods(third, []bridge.Bind{{Node: "h100-0", Group: memberName}, {Node: "h100-1", Group: memberName}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		fp := ""
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == launch.EnvKeySHA256 {
				fp = e.Value
			}
		}
		if fp == "" || fp == launchKeySHA256(string(planted.Data[LaunchKeyField])) || fp != launchKeySHA256(LaunchKey(f.opts.LaunchKeySeed, third)) {
			t.Errorf("pod %s carries key fingerprint %q: want the derived key's, never the planted one's", p.Name, fp)
		}
	}
	if sec.Immutable == nil || !*sec.Immutable {
		t.Errorf("the launch key Secret is not immutable")
	}
}

// TestFactoryRefusesAPlantedJobService: someone with rights in the account's namespace
// creates a Service named as a coming job's, selecting their own pods, so the job's
// node names (srun's peers, MASTER_ADDR) would resolve to them. The factory makes no
// pods for the job and says why.
func TestFactoryRefusesAPlantedJobService(t *testing.T) {
	_, b := rigServer(t)
	ctx := context.Background()
	f, err := NewPodFactory(e2e.Rig(t).RESTConfig(), PodOptions{LauncherImage: testLauncherImage})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Submit(ctx, &slurmapi.JobDesc{User: "alice", Account: "nlp", Partition: "h100", Script: "#!/bin/bash\nsrun hostname\n",
		Nodes: 2, Tasks: 2, CPUsPerTask: 1})
	if err != nil {
		t.Fatal(err)
	}
	var pg v1alpha1.PodGroup
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: "slurm-nlp", Name: PodGroupName(res.JobID)}, &pg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.c.Delete(ctx, &pg) })
	planted := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: JobServiceName(&pg), Namespace: pg.Namespace},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "eavesdropper"}}}
	if err := b.c.Create(ctx, planted); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.c.Delete(ctx, planted) })
	pods, err := f.Pods(&pg, []bridge.Bind{{Node: "h100-0", Group: memberName}, {Node: "h100-1", Group: memberName}})
	if err == nil || !strings.Contains(err.Error(), "not job") {
		t.Fatalf("with a planted Service the factory made %d pods (%v); want a refusal naming the Service", len(pods), err)
	}
}
