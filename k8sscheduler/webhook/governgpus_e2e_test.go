package webhook

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestGovernGPUsOnRig: the registration's namespace selector and match conditions, as the
// real API server evaluates them, send the webhook what GovernGPUs governs and nothing
// else. A tenant with edit in her namespace has her kube-scheduler GPU pod adopted, and
// her toleration of the GPU taint refused, at creation and on update; a DaemonSet's pod
// without GPUs keeps its tolerations. With the webhook down, her GPU pods are refused
// (failure policy Fail) while her other pods, and GPU pods in an exempt namespace, never
// call it.
func TestGovernGPUsOnRig(t *testing.T) {
	c := e2e.Rig(t)
	admin := c.Client()
	ctx := context.Background()
	mine, exempt := e2e.Namespace(t, c), e2e.Namespace(t, c)
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mallory-edit"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "mallory"}}}
	for _, ns := range []string{mine, exempt} {
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tenantCfg := c.RESTConfig()
	tenantCfg.Impersonate = rest.ImpersonationConfig{UserName: "mallory", Groups: []string{"system:authenticated"}}
	tenant := kubernetes.NewForConfigOrDie(tenantCfg)

	hook := startWebhookWith(t, c, Config{Addr: "127.0.0.1:0", Client: admin,
		GovernGPUs: GovernGPUs{Enabled: true, Action: ActionAdopt, ExemptNamespaces: append([]string{exempt}, DefaultExemptNamespaces...)}})
	t.Cleanup(func() {
		_ = admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), DefaultConfigurationName, metav1.DeleteOptions{})
	})
	waitMutating(t, admin, mine)

	gpuPod := func(name string) *corev1.Pod {
		p := testPod("", nil, nil, corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("8")})
		p.GenerateName, p.Name = "", name
		return p
	}
	cpuPod := func(name string, tol ...corev1.Toleration) *corev1.Pod {
		p := testPod("", nil, nil, nil)
		p.GenerateName, p.Name, p.Spec.Tolerations = "", name, tol
		return p
	}
	create := func(ns string, p *corev1.Pod) (*corev1.Pod, error) {
		out, err := tenant.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err == nil {
			t.Cleanup(func() {
				_ = admin.CoreV1().Pods(ns).Delete(context.Background(), out.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
			})
		}
		return out, err
	}
	refused := func(what string, err error, says ...string) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), GPUPodsWebhookName) {
			t.Errorf("%s: %v, want a 403 from %s", what, err, GPUPodsWebhookName)
			return
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %v, want it to say %q", what, err, s)
			}
		}
	}

	// Adopted: Sluice's name, a queue, the toleration.
	p, err := create(mine, gpuPod("adopted"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.SchedulerName != v1alpha1.DefaultSchedulerName || p.Labels[v1alpha1.QueueLabel] == "" || !toleratesGPUTaint(p) {
		t.Errorf("adopted pod: scheduler %q queue %q tolerations %+v", p.Spec.SchedulerName, p.Labels[v1alpha1.QueueLabel], p.Spec.Tolerations)
	}
	// Forged tolerations of the taint, explicit or by Exists on every key.
	_, err = create(mine, cpuPod("forged", corev1.Toleration{Key: v1alpha1.GPUTaint, Operator: corev1.TolerationOpExists}))
	refused("toleration of the taint's key", err, "Remove the toleration")
	_, err = create(mine, cpuPod("forged-all", corev1.Toleration{Operator: corev1.TolerationOpExists}))
	refused("toleration of every key", err)
	// Bound at creation.
	bound := gpuPod("bound")
	bound.Spec.NodeName = "h100-0"
	_, err = create(mine, bound)
	refused("GPU pod with spec.nodeName", err, "bypasses every scheduler")
	// A toleration appended later.
	plain, err := create(mine, cpuPod("plain"))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Spec.SchedulerName == v1alpha1.DefaultSchedulerName || toleratesGPUTaint(plain) {
		t.Errorf("a CPU pod was changed: %+v", plain.Spec)
	}
	plain.Spec.Tolerations = append(plain.Spec.Tolerations, corev1.Toleration{Key: v1alpha1.GPUTaint, Operator: corev1.TolerationOpExists})
	_, err = tenant.CoreV1().Pods(mine).Update(ctx, plain, metav1.UpdateOptions{})
	refused("toleration added on update", err, "may not be given")
	// A DaemonSet's pod without GPUs keeps its blanket toleration; with GPUs it is refused.
	yes := true
	ds := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "exporter", UID: "0c9d3e0c-0000-4000-8000-000000000001", Controller: &yes}}
	exporter := cpuPod("exporter", corev1.Toleration{Operator: corev1.TolerationOpExists})
	exporter.OwnerReferences = ds
	if _, err := create(mine, exporter); err != nil {
		t.Errorf("DaemonSet pod without GPUs: %v", err)
	}
	dsGPU := gpuPod("ds-gpu")
	dsGPU.OwnerReferences = ds
	_, err = create(mine, dsGPU)
	refused("DaemonSet pod with GPUs", err, "cannot place a DaemonSet's pods")

	// With the webhook down only what the registration selects depends on it.
	hook.shutdown()
	e2e.WaitFor(t, "the webhook down", time.Minute, func(ctx context.Context) (bool, error) {
		_, err := tenant.CoreV1().Pods(mine).Create(ctx, gpuPod("down"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "failed calling webhook \""+GPUPodsWebhookName+"\""), err
	})
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := tenant.CoreV1().Pods(mine).Create(ctx, cpuPod("cpu"), dry); err != nil {
		t.Errorf("a CPU pod called the webhook: %v", err)
	}
	if _, err := tenant.CoreV1().Pods(mine).Create(ctx, cpuPod("other-taint", corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}), dry); err != nil {
		t.Errorf("a pod tolerating another taint called the webhook: %v", err)
	}
	if _, err := tenant.CoreV1().Pods(mine).Create(ctx, exporter, dry); err != nil {
		t.Errorf("a DaemonSet's pod without GPUs called the webhook: %v", err)
	}
	if _, err := tenant.CoreV1().Pods(exempt).Create(ctx, gpuPod("exempt"), dry); err != nil {
		t.Errorf("a GPU pod in an exempt namespace called the webhook: %v", err)
	}
	initGPU := cpuPod("init-gpu")
	initGPU.Spec.InitContainers = []corev1.Container{{Name: "warm", Image: "cuda",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("1")}, Limits: corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("1")}}}}
	if _, err := tenant.CoreV1().Pods(mine).Create(ctx, initGPU, dry); err == nil || !strings.Contains(err.Error(), GPUPodsWebhookName) {
		t.Errorf("an init container's MIG slice: %v, want the webhook called", err)
	}
}
