package kube

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestFactoryRunsJobsAsTheirUser stores real jobs of a mapped and an unmapped
// user and has the factory make their pods on nodes that do and do not
// support supplementalGroupsPolicy: a mapped user runs as their uid, an
// unmapped one as the default non-root uid (or gets no pods where the site
// refuses them), always with runAsNonRoot; Strict groups only when every
// node of the job says it supports them. The pods are then created on the
// rig's API server, which keeps what the factory set.
func TestFactoryRunsJobsAsTheirUser(t *testing.T) {
	_, b := rigServer(t)
	ctx := context.Background()
	rig := e2e.Rig(t)
	// Nodes no kwok manages: one whose kubelet reports Strict support, one that does not.
	strict, plain := "identity-strict", "identity-plain"
	for name, supports := range map[string]bool{strict: true, plain: false} {
		node, err := rig.Client().CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "sluice.dev/test", Effect: corev1.TaintEffectNoSchedule}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rig.Client().CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		if supports {
			// A patch, not an update: the node lifecycle controller writes a new
			// node's status too, and an update would conflict with it.
			features := []byte(`{"status":{"features":{"supplementalGroupsPolicy":true}}}`)
			if _, err := rig.Client().CoreV1().Nodes().PatchStatus(ctx, node.Name, features); err != nil {
				t.Fatal(err)
			}
		}
	}
	job := func(user string, nodes int) *v1alpha1.PodGroup {
		t.Helper()
		res, err := b.Submit(ctx, &slurmapi.JobDesc{User: user, Account: "nlp", Partition: "h100", Script: "#!/bin/bash\ntrue\n",
			Nodes: nodes, Tasks: nodes, CPUsPerTask: 1})
		if err != nil {
			t.Fatal(err)
		}
		var pg v1alpha1.PodGroup
		if err := b.c.Get(ctx, client.ObjectKey{Namespace: "slurm-nlp", Name: PodGroupName(res.JobID)}, &pg); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.c.Delete(context.Background(), &pg) })
		return &pg
	}
	users := map[string]UserIDs{"alice": {UID: 1001, GID: 1001, Groups: []int64{2000}}}
	alice := UserIDs{UID: 1001, GID: 1001, Groups: []int64{1001, 2000}} // in their own group too
	on := func(nodes ...string) []bridge.Bind {
		binds := make([]bridge.Bind, len(nodes))
		for i, n := range nodes {
			binds[i] = bridge.Bind{Node: n, Group: memberName}
		}
		return binds
	}
	tests := []struct {
		name    string
		users   UserMap
		user    string
		binds   []bridge.Bind
		want    UserIDs
		strict  bool
		refused string
	}{
		{"mapped user on a Strict node", UserMap{Users: users}, "alice", on(strict), alice, true, ""},
		{"mapped user on a node without Strict", UserMap{Users: users}, "alice", on(plain), alice, false, ""},
		{"a job on both kinds of node gets no Strict", UserMap{Users: users}, "alice", on(strict, plain), alice, false, ""},
		{"unmapped user runs as nobody", UserMap{Users: users}, "bob", on(strict), NobodyIDs, true, ""},
		{"unmapped user runs as the site's default", UserMap{Users: users, Default: &UserIDs{UID: 5000, GID: 5000}}, "bob", on(plain), UserIDs{UID: 5000, GID: 5000}, false, ""},
		{"unmapped user refused", UserMap{Users: users, Unmapped: UnmappedRefuse}, "bob", on(strict), UserIDs{}, false, `user "bob" has no uid`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewPodFactory(rig.RESTConfig(), PodOptions{Users: tc.users})
			if err != nil {
				t.Fatal(err)
			}
			pg := job(tc.user, len(tc.binds))
			pods, err := f.Pods(pg, tc.binds)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("pods %v, err %v; want refused with %q", len(pods), err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, pod := range pods {
				pod.Spec.NodeName = tc.binds[i].Node
				pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
				created, err := rig.Client().CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					t.Fatalf("create pod %s: %v", pod.Name, err)
				}
				sc := created.Spec.SecurityContext
				if sc == nil || sc.RunAsUser == nil || sc.RunAsGroup == nil || sc.RunAsNonRoot == nil {
					t.Fatalf("pod %s security context %+v: want runAsUser, runAsGroup, runAsNonRoot", pod.Name, sc)
				}
				got := UserIDs{UID: *sc.RunAsUser, GID: *sc.RunAsGroup, Groups: sc.SupplementalGroups}
				if !reflect.DeepEqual(got, tc.want) || !*sc.RunAsNonRoot {
					t.Errorf("pod %s runs as %+v non-root %v, want %+v non-root", pod.Name, got, *sc.RunAsNonRoot, tc.want)
				}
				strict := sc.SupplementalGroupsPolicy != nil && *sc.SupplementalGroupsPolicy == corev1.SupplementalGroupsPolicyStrict
				if strict != tc.strict {
					t.Errorf("pod %s on %s: supplementalGroupsPolicy %v, want Strict: %v", pod.Name, pod.Spec.NodeName, sc.SupplementalGroupsPolicy, tc.strict)
				}
			}
		})
	}
}
