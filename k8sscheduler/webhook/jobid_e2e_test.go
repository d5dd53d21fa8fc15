package webhook

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/e2e"
)

// Through a real API server: a bare pod comes out of admission a group of one, numbered;
// a server-side dry run of the same is mutated alike but takes no id (the registration
// says NoneOnDryRun, so the API server calls the webhook for it and says it is one).
func TestWebhookNumbersBarePodsOnRig(t *testing.T) {
	c := e2e.Rig(t)
	client := c.Client()
	ctx := context.Background()
	var next atomic.Uint32
	next.Store(500)
	startWebhookWith(t, c, Config{Addr: "127.0.0.1:0", Client: client,
		JobIDs: func(context.Context) (uint32, error) { return next.Add(1), nil }})
	t.Cleanup(func() {
		_ = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, DefaultConfigurationName, metav1.DeleteOptions{})
	})
	ns := e2e.Namespace(t, c)
	waitMutating(t, client, ns)
	taken := next.Load()

	bare := func(name string) *corev1.Pod {
		p := testPod("sluice", nil, nil, nil)
		p.GenerateName, p.Name = "", name
		return p
	}
	dry, err := client.CoreV1().Pods(ns).Create(ctx, bare("dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	// A dry run takes no id, and without one nothing names a bare pod's group uniquely.
	if dry.Annotations[v1alpha1.PodGroupAnnotation] != "" || dry.Labels[v1alpha1.JobIDLabel] != "" || next.Load() != taken {
		t.Errorf("dry run: group %q, job id %q, ids taken %d; want no group named and no id taken",
			dry.Annotations[v1alpha1.PodGroupAnnotation], dry.Labels[v1alpha1.JobIDLabel], next.Load()-taken)
	}
	pod, err := client.CoreV1().Pods(ns).Create(ctx, bare("eval"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !jobstate.GroupOfOne(pod) || v1alpha1.JobIDOf(pod.Labels) != taken+1 {
		t.Errorf("bare pod: labels %v annotations %v; want a group of one numbered %d", pod.Labels, pod.Annotations, taken+1)
	}
	want := fmt.Sprintf("eval-job%d", taken+1)
	if pg := jobstate.ImpliedPodGroup(pod); pg.Name != want || pg.Spec.Queue != v1alpha1.DefaultQueue {
		t.Errorf("implied PodGroup %s in queue %q, want %s in %q", pg.Name, pg.Spec.Queue, want, v1alpha1.DefaultQueue)
	}
}
