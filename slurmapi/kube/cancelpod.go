package kube

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/slurmapi"
)

// cancelBarePod is scancel of a job that is one bare pod (jobstate.Job.BarePod): its
// pod is deleted, with the pod's usual grace period (the kubelet sends SIGTERM, then
// SIGKILL, as slurmd does), and a written PodGroup goes with it (owner reference). An
// ended pod stays, as the record of how the job ended.
func (b *Backend) cancelBarePod(ctx context.Context, id uint32, pod *corev1.Pod) error {
	if err := cancellable(id, pod); err != nil {
		return err
	}
	err := b.c.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	switch {
	case apierrors.IsNotFound(err):
		return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrAlreadyDone, "job_id", "job %d already ended: its pod %s/%s is gone", id, pod.Namespace, pod.Name)
	case err != nil:
		return fmt.Errorf("delete pod %s/%s of job %d: %w", pod.Namespace, pod.Name, id, err)
	}
	return nil
}

// cancellable refuses scancel of a bare pod's job that ended or is being deleted.
func cancellable(id uint32, pod *corev1.Pod) error {
	switch {
	case pod.DeletionTimestamp != nil:
		return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrAlreadyDone, "job_id", "job %d is already being cancelled: its pod %s/%s is being deleted", id, pod.Namespace, pod.Name)
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrAlreadyDone, "job_id", "job %d already ended (pod %s/%s %s)", id, pod.Namespace, pod.Name, pod.Status.Phase)
	}
	return nil
}
