package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// gpuClaimName is the pod's claim of its GPUs on a partition whose GPUs come through
// Dynamic Resource Allocation, and the ResourceClaim the factory makes for it.
const gpuClaimName = "gpus"

// claimGPUs makes a pod that asks nvidia.com/gpu claim its GPUs from class instead (a
// DRA partition's; "" leaves the pod as it is): the count moves from the container's
// resources to a ResourceClaim named after the pod (GPUClaim), which the scheduler
// allocates on the pod's node as it creates it. The driver, not Sluice, makes the
// devices visible in the container.
func claimGPUs(pod *corev1.Pod, class string) {
	if class == "" {
		return
	}
	c := &pod.Spec.Containers[0]
	n, ok := c.Resources.Requests[v1alpha1.GPUResource]
	if !ok || n.IsZero() {
		return
	}
	delete(c.Resources.Requests, v1alpha1.GPUResource)
	delete(c.Resources.Limits, v1alpha1.GPUResource)
	name := GPUClaim(pod.Name)
	pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, corev1.PodResourceClaim{Name: gpuClaimName, ResourceClaimName: &name})
	c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: gpuClaimName})
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[gpuClaimCountAnnotation] = n.String()
	pod.Annotations[gpuClaimClassAnnotation] = class
}

// The claim's ask, carried on the pod from BuildPods to ensureGPUClaims.
const (
	gpuClaimCountAnnotation = "sluice.dev/gpu-claim-count"
	gpuClaimClassAnnotation = "sluice.dev/gpu-claim-class"
)

// GPUClaim names the ResourceClaim of a Slurm job pod's GPUs.
func GPUClaim(pod string) string { return pod + "-" + gpuClaimName }

// ensureGPUClaims makes the ResourceClaim of each pod that claims its GPUs (claimGPUs),
// owned by the job's PodGroup so it goes with the job. One left by an earlier run of the
// job is deleted and made again: its devices were on that run's nodes.
func (f *PodFactory) ensureGPUClaims(ctx context.Context, pg *v1alpha1.PodGroup, pods []*corev1.Pod) error {
	for _, pod := range pods {
		class, count := pod.Annotations[gpuClaimClassAnnotation], pod.Annotations[gpuClaimCountAnnotation]
		if class == "" {
			continue
		}
		var n int64
		if _, err := fmt.Sscan(count, &n); err != nil || n <= 0 {
			return fmt.Errorf("job %s: pod %s claims %q GPUs", pg.Labels[v1alpha1.JobIDLabel], pod.Name, count)
		}
		claim := &resourcev1.ResourceClaim{
			ObjectMeta: jobObjectMeta(GPUClaim(pod.Name), pg),
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
				Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class,
					AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: n}}}}},
		}
		err := f.c.Create(ctx, claim)
		if apierrors.IsAlreadyExists(err) {
			old := &resourcev1.ResourceClaim{}
			if err := f.c.Get(ctx, client.ObjectKeyFromObject(claim), old); err != nil {
				return fmt.Errorf("read ResourceClaim %s/%s: %w", claim.Namespace, claim.Name, err)
			}
			if !ownedBy(old, pg) {
				return fmt.Errorf("a ResourceClaim %s/%s exists that job %s does not own: delete it", claim.Namespace, claim.Name, pg.Labels[v1alpha1.JobIDLabel])
			}
			if err := f.c.Delete(ctx, old, &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &old.UID}}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete the earlier run's ResourceClaim %s/%s: %w", claim.Namespace, claim.Name, err)
			}
			// Its finalizer holds it until its devices are given back: this try fails,
			// the scheduler tries the start again.
			return fmt.Errorf("job %s: the earlier run's ResourceClaim %s is being deleted", pg.Labels[v1alpha1.JobIDLabel], claim.Name)
		}
		if err != nil {
			return fmt.Errorf("create ResourceClaim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
	}
	return nil
}
