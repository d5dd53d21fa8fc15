package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A pod with resource claims that got past the webhook (webhook off) waits with the
// reason, never silently: Sluice allocates no claims.
func TestPodWithResourceClaimsWaitsWithAReason(t *testing.T) {
	tmpl := "one-gpu"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName,
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}},
			Containers:     []corev1.Container{{Name: "main"}}},
	}
	e := convertPod(slimPod(pod, v1alpha1.DefaultSchedulerName), v1alpha1.DefaultSchedulerName)
	if e.bad != v1alpha1.ResourceClaimsRefusal {
		t.Errorf("bad = %q, want the resource-claims refusal", e.bad)
	}
	pod.Spec.ResourceClaims = nil
	if e := convertPod(slimPod(pod, v1alpha1.DefaultSchedulerName), v1alpha1.DefaultSchedulerName); e.bad != "" {
		t.Errorf("a pod without claims is bad: %q", e.bad)
	}
}
