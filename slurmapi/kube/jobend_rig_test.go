package kube

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestJobPastItsDeadlineTimesOutOnRig: a batch/v1 Job whose activeDeadlineSeconds runs
// out is failed by the rig's Job controller, which stops its pods; the lifecycle writes
// that end on its PodGroup (phase Failed, endReason DeadlineExceeded), and squeue and
// job/{id} read TIMEOUT (the recorder derives the ledger's state and the PodGroup's State
// column from the same model).
func TestJobPastItsDeadlineTimesOutOnRig(t *testing.T) {
	_, b := rigServer(t)
	ctx := context.Background()
	runSharedLifecycle(t)
	ns := groupOfOneNamespace(t, b)
	node := firstNode(t, b)
	id, err := b.JobIDs().Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name := "deadline-" + strconv.FormatUint(uint64(id), 10)
	group := name + "-pg"
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name},
		Spec: batchv1.JobSpec{ActiveDeadlineSeconds: ptr.To[int64](2), BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.PodGroupAnnotation: group}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, NodeName: node, AutomountServiceAccountToken: ptr.To(false),
					Containers: []corev1.Container{{Name: "main", Image: "trainer", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}}}
	if err := b.c.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.c.Delete(context.Background(), job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
	// The group the pod grouper makes for the Job: owned by it (not as its controller),
	// numbered.
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: group,
		Labels:          map[string]string{v1alpha1.JobIDLabel: strconv.FormatUint(uint64(id), 10)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID}}},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "nlp"}}
	if err := b.c.Create(ctx, pg); err != nil {
		t.Fatal(err)
	}
	pg.Status.Phase = v1alpha1.PodGroupRunning // as the scheduler writes it once the pod is bound
	if err := b.c.Status().Update(ctx, pg); err != nil {
		t.Fatal(err)
	}

	e2e.WaitFor(t, fmt.Sprintf("job %d TIMEOUT", id), 90*time.Second, func(ctx context.Context) (bool, error) {
		j, err := b.Job(ctx, id)
		if err != nil {
			return false, err
		}
		return j.State[0] == "TIMEOUT", fmt.Errorf("state %v", j.State)
	})
	if err := b.c.Get(ctx, client.ObjectKeyFromObject(pg), pg); err != nil {
		t.Fatal(err)
	}
	if pg.Status.Phase != v1alpha1.PodGroupFailed || pg.Status.EndReason != batchv1.JobReasonDeadlineExceeded || pg.Status.EndTime == nil {
		t.Errorf("PodGroup status %s / %q / end %v, want Failed / DeadlineExceeded with an end time", pg.Status.Phase, pg.Status.EndReason, pg.Status.EndTime)
	}
	if j, err := b.Job(ctx, id); err != nil || j.Reason != "TimeLimit" {
		t.Errorf("job %d reason %q (%v), want TimeLimit", id, j.Reason, err)
	}
}
