package tenancy

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/webhook"
	"github.com/sluicehq/sluice/test/e2e"
)

// The probes of issue 35 item 3, against the shared server as serverConfig runs it
// (webhook.governGPUs on, action adopt, GPU nodes tainted): a tenant with edit in her
// namespace cannot run GPUs outside Sluice's queues.

// gpuPod is a pod asking for n GPUs that names no scheduler (kube-scheduler's, once the
// API server defaults it).
func gpuPod(name string, n int64) *corev1.Pod {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "registry.example/train:latest",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{v1alpha1.GPUResource: q}}}}},
	}
}

func tolerates(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == v1alpha1.GPUTaint })
}

// A kube-scheduler pod asking for 8 GPUs is adopted into its namespace's queue, not
// placed by kube-scheduler beside the queue; with one GPU it is then placed by Sluice on a
// GPU node, which carries the taint only Sluice's pods tolerate.
func TestGPUPodOfAnotherSchedulerIsAdopted(t *testing.T) {
	s := siteFor(t)
	tenant, ns := kubeTenant(t, s)
	ctx := context.Background()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"vision"}}}`, v1alpha1.QueueLabel)
	if _, err := s.kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e2e.WaitFor(t, "the namespace's queue label seen by the webhook", time.Minute, func(ctx context.Context) (bool, error) {
		p, err := tenant.CoreV1().Pods(ns).Create(ctx, gpuPod("probe", 1), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return p.Labels[v1alpha1.QueueLabel] == "vision", fmt.Errorf("queue %q", p.Labels[v1alpha1.QueueLabel])
	})

	eight, err := tenant.CoreV1().Pods(ns).Create(ctx, gpuPod("eight", 8), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("an 8-GPU pod of kube-scheduler: %v, want it adopted", err)
	}
	if eight.Spec.SchedulerName != v1alpha1.DefaultSchedulerName || eight.Labels[v1alpha1.QueueLabel] != "vision" || !tolerates(eight) {
		t.Errorf("adopted pod: scheduler %q queue %q tolerations %+v; want Sluice's, vision, the GPU taint's",
			eight.Spec.SchedulerName, eight.Labels[v1alpha1.QueueLabel], eight.Spec.Tolerations)
	}

	// Every GPU node carries the taint.
	e2e.WaitFor(t, "GPU nodes tainted "+v1alpha1.GPUTaint, time.Minute, func(ctx context.Context) (bool, error) {
		nodes, err := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, n := range nodes.Items {
			if q := n.Status.Allocatable[v1alpha1.GPUResource]; !q.IsZero() &&
				!slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha1.GPUTaint }) {
				return false, fmt.Errorf("node %s has GPUs and no taint", n.Name)
			}
		}
		return true, nil
	})
	one := gpuPod("one", 1)
	one.Labels = map[string]string{v1alpha1.PartitionLabel: "a100"} // vision's quota is there
	if _, err := tenant.CoreV1().Pods(ns).Create(ctx, one, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var node string
	e2e.WaitFor(t, "the adopted 1-GPU pod placed", 2*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := s.kube.CoreV1().Pods(ns).Get(ctx, "one", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", fmt.Errorf("pending: %+v", p.Status.Conditions)
	})
	n, err := s.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha1.GPUTaint }) {
		t.Errorf("placed on %s, taints %+v: want a GPU node with the taint", node, n.Spec.Taints)
	}
}

// What would let kube-scheduler, or no scheduler, reach a GPU node is refused: a toleration
// of the taint (at creation or appended later), a GPU pod bound at creation, a DaemonSet's
// GPU pod; each refusal says what to do.
func TestGPUTaintCannotBeToleratedByOtherSchedulers(t *testing.T) {
	s := siteFor(t)
	tenant, ns := kubeTenant(t, s)
	ctx := context.Background()
	refused := func(what string, err error, says ...string) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !containsAll(err.Error(), append(says, webhook.GPUPodsWebhookName, "webhook.governGPUs.exemptNamespaces")) {
			t.Errorf("%s: %v, want a 403 from %s saying %q", what, err, webhook.GPUPodsWebhookName, says)
		}
	}
	tolerating := sluicePod("tolerating", nil, nil)
	tolerating.Spec.SchedulerName = "default-scheduler"
	tolerating.Spec.Tolerations = []corev1.Toleration{{Key: v1alpha1.GPUTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	_, err := tenant.CoreV1().Pods(ns).Create(ctx, tolerating, metav1.CreateOptions{})
	refused("kube-scheduler pod tolerating the taint", err, "Remove the toleration")
	everything := tolerating.DeepCopy()
	everything.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	_, err = tenant.CoreV1().Pods(ns).Create(ctx, everything, metav1.CreateOptions{})
	refused("kube-scheduler pod tolerating every taint", err)

	bound := gpuPod("bound", 8)
	bound.Spec.NodeName = "h100-0"
	_, err = tenant.CoreV1().Pods(ns).Create(ctx, bound, metav1.CreateOptions{})
	refused("GPU pod created with spec.nodeName", err, "bypasses every scheduler")
	boundSluice := bound.DeepCopy()
	boundSluice.Spec.SchedulerName = v1alpha1.DefaultSchedulerName
	_, err = tenant.CoreV1().Pods(ns).Create(ctx, boundSluice, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !containsAll(err.Error(), []string{"bypasses every scheduler"}) {
		t.Errorf("Sluice GPU pod created with spec.nodeName: %v, want a 403", err)
	}

	yes := true
	dsPod := gpuPod("ds-gpu", 1)
	dsPod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "miner",
		UID: "0c9d3e0c-0000-4000-8000-000000000002", Controller: &yes}}
	_, err = tenant.CoreV1().Pods(ns).Create(ctx, dsPod, metav1.CreateOptions{})
	refused("a DaemonSet's GPU pod", err, "cannot place a DaemonSet's pods")

	plain := sluicePod("plain", nil, nil)
	plain.Spec.SchedulerName = "default-scheduler"
	created, err := tenant.CoreV1().Pods(ns).Create(ctx, plain, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a CPU pod of kube-scheduler: %v", err)
	}
	created.Spec.Tolerations = append(created.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
	_, err = tenant.CoreV1().Pods(ns).Update(ctx, created, metav1.UpdateOptions{})
	refused("a toleration of every taint appended to a kube-scheduler pod", err, "may not be given")
	after, err := s.kube.CoreV1().Pods(ns).Get(ctx, "plain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tolerates(after) || slices.ContainsFunc(after.Spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == "" }) {
		t.Errorf("the refused update changed the pod's tolerations: %+v", after.Spec.Tolerations)
	}
}
