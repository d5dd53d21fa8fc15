package remediation

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/agent"
	"github.com/sluicehq/sluice/remediation/health"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestGPULocalFaultEvictsOnlyThatGPU: three pods placed by Sluice on one node, two on a
// whole GPU each and one on half a GPU. A row remap pending on the first pod's GPU
// evicts that pod only; the node stays in service, the GPU is marked unhealthy, and the
// other pods keep running. When the GPU is reset the repair request closes.
func TestGPULocalFaultEvictsOnlyThatGPU(t *testing.T) {
	node := cluster.NodeName("h100", 3)
	s := startSite(t, node)
	pods := map[string]map[string]string{
		"whole-a": nil,
		"whole-b": nil,
		"half":    {v1alpha1.GPUFractionAnnotation: "0.5"},
	}
	for name, ann := range pods {
		s.createGPUPod(name, node, ann)
	}
	gpuOf := map[string]int{}
	e2e.WaitFor(t, "pods placed by Sluice on "+node, 90*time.Second, func(ctx context.Context) (bool, error) {
		for name := range pods {
			p, err := s.kube.CoreV1().Pods(s.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			a, ok, err := v1alpha1.GPUAssignmentOf(p.Annotations)
			if err != nil || !ok || len(a.GPUs) != 1 || p.Status.Phase != corev1.PodRunning {
				return false, fmt.Errorf("pod %s: phase %s, assignment %+v (%v)", name, p.Status.Phase, a, err)
			}
			gpuOf[name] = int(a.GPUs[0].Index)
		}
		return true, nil
	})
	bad := gpuOf["whole-a"]
	if gpuOf["whole-b"] == bad || gpuOf["half"] == bad {
		t.Fatalf("GPU assignment %v: a whole GPU is shared", gpuOf)
	}

	s.inject(node, &agent.Faults{GPUs: []agent.InjectedGPU{{Index: bad, RowRemapPending: true}}})
	e2e.WaitFor(t, "pod on the faulty GPU evicted", 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := s.kube.CoreV1().Pods(s.ns).Get(ctx, "whole-a", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	got := s.node(node)
	if tainted(got) {
		t.Error("a GPU-local fault quarantined the whole node")
	}
	if req, ok, err := health.ParseRepair(got.Annotations); err != nil || !ok || req.Action != health.ActionGPUReset.String() || len(req.GPUs) != 1 {
		t.Errorf("repair request %+v (%v), want a GPUReset of one GPU", req, err)
	}
	gpus, err := health.ParseGPUs(got.Annotations[health.GPUsAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gpus {
		if g.Healthy == (int(g.Index) == bad) {
			t.Errorf("GPU %d healthy=%v with the fault on GPU %d", g.Index, g.Healthy, bad)
		}
	}
	time.Sleep(2 * time.Second) // give a wrong eviction (two retry intervals) the time to show
	for _, name := range []string{"whole-b", "half"} {
		p, err := s.kube.CoreV1().Pods(s.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s on healthy GPU %d was disturbed (%v)", name, gpuOf[name], err)
		}
	}

	s.inject(node, nil)
	s.waitNode(node, "GPU back in service", 30*time.Second, func(n *corev1.Node) bool {
		_, pending := n.Annotations[health.RepairAnnotation]
		gpus, err := health.ParseGPUs(n.Annotations[health.GPUsAnnotation])
		return !pending && err == nil && len(gpus) > bad && gpus[bad].Healthy
	})
}

// createGPUPod creates a manifest pod for Sluice pinned to node: one whole GPU, or the
// share its annotations ask for. It runs until deleted.
func (s *site) createGPUPod(name, node string, annotations map[string]string) {
	s.t.Helper()
	zero := int64(0)
	res := corev1.ResourceRequirements{}
	if annotations[v1alpha1.GPUFractionAnnotation] == "" {
		one := corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")}
		res.Requests, res.Limits = one, one
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Annotations: annotations,
			Labels: map[string]string{v1alpha1.QueueLabel: "nlp"}},
		Spec: corev1.PodSpec{
			SchedulerName:                 v1alpha1.DefaultSchedulerName,
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": node},
			TerminationGracePeriodSeconds: &zero,
			Containers:                    []corev1.Container{{Name: "work", Image: "train:latest", Resources: res}},
		},
	}
	if _, err := s.kube.CoreV1().Pods(s.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("create pod %s: %v", name, err)
	}
}
