package chart

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/test/cluster"
)

// nodeNameExtra is where the API server puts the node of a token bound to a pod.
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// agentView is what the refused patches aimed at: labels, annotations, the
// test's taint and the fault condition.
func agentView(n *corev1.Node) string {
	taint, fault := false, corev1.ConditionStatus("")
	for _, tn := range n.Spec.Taints {
		taint = taint || tn.Key == "sluice.dev/test"
	}
	for _, c := range n.Status.Conditions {
		if c.Type == "GPUXidError" {
			fault = c.Status
		}
	}
	return fmt.Sprintf("labels %v annotations %v test taint %v GPUXidError %q", n.Labels, n.Annotations, taint, fault)
}

// agentChangesOnlyItsOwnNode: the chart's ValidatingAdmissionPolicy holds the
// agent's token to the node its pod runs on. With the token the kubelet would
// project into an agent pod on node A, the agent may write A's GPU annotation
// and fault conditions, and nothing of node B, nor A's taints, labels or
// other annotations; a token bound to no pod changes no node. Refused
// writes leave the nodes as they were.
func agentChangesOnlyItsOwnNode(t *testing.T, c *cluster.Cluster, ns string) {
	ctx := context.Background()
	admin := c.Client()
	// Nodes no kwok manages (no kwok annotation): nothing runs there, and the
	// taint keeps other tests' pods off them.
	a, b := ns+"-node-a", ns+"-node-b"
	for _, name := range []string{a, b} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "sluice.dev/test", Value: "agent", Effect: corev1.TaintEffectNoSchedule}}}}
		if _, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node %s: %v", name, err)
		}
		t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	// The agent's pod on node A, as the DaemonSet makes it; it tolerates every
	// taint (as the chart's agent does), so no taint manager deletes it and its token.
	pod, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-on-a"},
		Spec: corev1.PodSpec{ServiceAccountName: "sluice-agent", NodeName: a,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "agent", Image: "sluice"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound := kubernetes.NewForConfigOrDie(boundTokenConfig(t, c, ns, "sluice-agent",
		&authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}))
	unbound := kubernetes.NewForConfigOrDie(tokenConfig(t, c, ns, "sluice-agent"))

	// The rig issues what a kubelet gets: a pod-bound token naming the pod's node.
	review, err := bound.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := review.Status.UserInfo.Extra[nodeNameExtra]; len(got) != 1 || got[0] != a {
		t.Fatalf("the pod-bound token's %s is %v, want [%s] (extra %v)", nodeNameExtra, got, a, review.Status.UserInfo.Extra)
	}

	gpus := `{"metadata":{"annotations":{"` + health.GPUsAnnotation + `":"[]"}}}`
	waitPolicyInEffect(t, bound, b, gpus)
	fault := `{"status":{"conditions":[{"type":"GPUXidError","status":"True","reason":"GPUResetRequired","message":"test"}]}}`
	tests := []struct {
		name    string
		client  kubernetes.Interface
		node    string
		status  bool // patch nodes/status (else the Node)
		patch   string
		refused string // part of the policy's message; "" when allowed
	}{
		{"GPU annotation of its own node", bound, a, false, gpus, ""},
		{"fault condition of its own node", bound, a, true, fault, ""},
		{"GPU annotation of another node", bound, b, false, gpus, "agent on node " + a + " may not change node " + b},
		{"fault condition of another node", bound, b, true, fault, "agent on node " + a + " may not change node " + b},
		{"taints of its own node", bound, a, false, `{"spec":{"taints":null}}`, "not its spec (taints), labels or other annotations"},
		{"labels of its own node", bound, a, false, `{"metadata":{"labels":{"sluice.dev/partition":"h100"}}}`, "not its spec (taints), labels or other annotations"},
		{"repair request of its own node", bound, a, false, `{"metadata":{"annotations":{"sluice.dev/repair":"{}"}}}`, "not its spec (taints), labels or other annotations"},
		{"own node with a token bound to no pod", unbound, a, false, gpus, "bound to no pod on a node"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, err := admin.CoreV1().Nodes().Get(ctx, tc.node, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			nodes := tc.client.CoreV1().Nodes()
			if tc.status {
				_, err = nodes.PatchStatus(ctx, tc.node, []byte(tc.patch))
			} else {
				_, err = nodes.Patch(ctx, tc.node, types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{})
			}
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("patch %s: %v", tc.patch, err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("patch %s of %s: %v; want it refused with %q", tc.patch, tc.node, err, tc.refused)
			}
			after, err := admin.CoreV1().Nodes().Get(ctx, tc.node, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Not the resourceVersion: the node lifecycle controller writes these nodes too.
			if was, is := agentView(before), agentView(after); was != is {
				t.Errorf("node %s changed by a refused patch: %s -> %s", tc.node, was, is)
			}
		})
	}
}

// policyEffectTimeout bounds the wait for a newly applied admission policy:
// the API server loads policies and bindings from its own informers, so a
// policy applied a moment ago may not refuse anything yet (seen on a loaded rig).
const policyEffectTimeout = time.Minute

// waitPolicyInEffect waits until the agent's policy refuses the agent's
// patch of another node, trying it as a server-side dry run, so nothing is
// changed while the policy is not yet loaded.
func waitPolicyInEffect(t *testing.T, agent kubernetes.Interface, otherNode, patch string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(policyEffectTimeout)
	for {
		_, err := agent.CoreV1().Nodes().Patch(ctx, otherNode, types.MergePatchType, []byte(patch),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsForbidden(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent policy did not take effect within %s: a dry-run patch of node %s by the agent answered %v", policyEffectTimeout, otherNode, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
