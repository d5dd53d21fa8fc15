package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/e2e"
)

// memberPods makes one pod per bind from the PodGroup's member sets, the way the Slurm
// API's factory does, counting its calls.
type memberPods struct{ calls atomic.Int32 }

func (f *memberPods) Pods(pg *v1alpha1.PodGroup, binds []bridge.Bind) ([]*corev1.Pod, error) {
	f.calls.Add(1)
	out := make([]*corev1.Pod, len(binds))
	for i, b := range binds {
		var req corev1.ResourceList
		for _, m := range pg.Spec.Members {
			if m.Name == b.Group {
				req = m.Resources
			}
		}
		out[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", pg.Name, i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "batch", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: req, Limits: req}}}}}
	}
	return out, nil
}

// A Slurm job's PodGroup has no pods until it starts: its pods are created already bound,
// with their GPU assignment, once, and the group turns Running.
func TestSlurmJobPodsCreatedBound(t *testing.T) {
	e := setup(t)
	e.queue("slurm-q", "slurm", 0)
	factory := &memberPods{}
	s := e.runWith(factory)
	gpus := corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("4"), corev1.ResourceCPU: resource.MustParse("2")}
	e.create(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-7", Namespace: e.ns},
		Spec: v1alpha1.PodGroupSpec{MinMember: 2, Queue: "slurm-q", Partition: "slurm",
			Members: []v1alpha1.MemberSet{{Name: "node", Count: 2, Resources: gpus}},
			Slurm:   &v1alpha1.SlurmJob{User: "alice"}}})
	e.condition("job-7", v1alpha1.PodGroupConditionScheduled, metav1.ConditionTrue, waitLong)
	nodes := e.waitBound([]string{"job-7-0", "job-7-1"}, waitLong)
	for i, name := range []string{"job-7-0", "job-7-1"} {
		p := e.pod(name)
		a, err := v1alpha1.ParseGPUAssignment(p.Annotations[v1alpha1.GPUAssignmentAnnotation])
		if err != nil || len(a.GPUs) != 4 || p.Annotations[v1alpha1.PodGroupAnnotation] != "job-7" || nodes[i] == "" {
			t.Errorf("pod %s on %q: assignment %+v (%v), annotations %v", name, nodes[i], a, err, p.Annotations)
		}
	}
	pg := &v1alpha1.PodGroup{}
	if err := e.crs.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "job-7"}, pg); err != nil {
		t.Fatal(err)
	}
	// status.running is kubectl get podgroups' Running column: both pods, not the 0 the
	// cache counted when the group started.
	if pg.Status.Phase != v1alpha1.PodGroupRunning || pg.Status.StartTime == nil || pg.Status.Running != 2 {
		t.Errorf("PodGroup phase %q start %v running %d, want Running with a start time and 2 running", pg.Status.Phase, pg.Status.StartTime, pg.Status.Running)
	}
	// The job is placed once: the cycles after it started neither call the factory nor
	// make pods.
	since := cycles(s)
	e2e.WaitFor(t, "three more scheduling cycles", waitLong, func(context.Context) (bool, error) {
		n := cycles(s) - since
		return n >= 3, fmt.Errorf("%d cycles", n)
	})
	pods, err := e.rig.Client().CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 || factory.calls.Load() != 1 {
		t.Errorf("%d pods after %d factory calls, want 2 pods from 1 call", len(pods.Items), factory.calls.Load())
	}
}

// A Slurm job whose pods the API server refuses (here a ResourceQuota of no pods) is
// tried again after 1, 2, 4 ... seconds, saying so in its Scheduled condition, not every
// cycle; once the quota is gone it starts.
func TestRefusedSlurmJobBacksOff(t *testing.T) {
	e := setup(t)
	e.queue("slurm-q", "slurm", 0)
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-pods", Namespace: e.ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}
	quotas := e.rig.Client().CoreV1().ResourceQuotas(e.ns)
	if _, err := quotas.Create(context.Background(), quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory := &memberPods{}
	e.runWith(factory)
	gpus := corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")}
	e.create(&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-9", Namespace: e.ns},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "slurm-q", Partition: "slurm",
			Members: []v1alpha1.MemberSet{{Name: "node", Count: 1, Resources: gpus}},
			Slurm:   &v1alpha1.SlurmJob{User: "alice"}}})
	e2e.WaitFor(t, "job-9 to wait 4s after its third refused create", waitLong, func(ctx context.Context) (bool, error) {
		pg := &v1alpha1.PodGroup{}
		if err := e.crs.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "job-9"}, pg); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionScheduled)
		if c == nil || c.Reason != v1alpha1.ReasonPodCreateFailed || !strings.Contains(c.Message, "trying again 4s after") {
			return false, fmt.Errorf("conditions %+v", pg.Status.Conditions)
		}
		return true, nil
	})
	// Three tries (a fourth if the 4 s passed meanwhile), where placing it again at
	// once made one every cycle.
	if n := factory.calls.Load(); n < 3 || n > 4 {
		t.Errorf("the job's pods were made %d times in its first three failures and waits, want 3 or 4", n)
	}
	if err := quotas.Delete(context.Background(), quota.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.condition("job-9", v1alpha1.PodGroupConditionScheduled, metav1.ConditionTrue, waitLong)
	e.waitBound([]string{"job-9-0"}, waitLong)
}
