package podgrouper

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// maxOwnerDepth bounds the owner walk, so an ownership cycle (which the API
// server does not forbid) cannot loop forever.
const maxOwnerDepth = 16

// EnsurePodGroup returns the PodGroup of pod, creating it if it does not
// exist yet. A pod whose sluice.dev/pod-group annotation names a group gets
// that group, which must exist (numbered, when ids are given: usergroup.go). Otherwise the group is derived by ForPod
// from the owner chain and created with an owner reference to the owning
// workload, so it goes away with it.
//
// The only write is that create, once per group: pods that find their group
// already there write nothing. c needs the scheduling scheme registered;
// owners are read as unstructured, so their kinds need not be.
func EnsurePodGroup(ctx context.Context, c client.Client, pod *corev1.Pod) (*v1alpha1.PodGroup, error) {
	return EnsurePodGroupWithID(ctx, c, pod, nil)
}

// JobIDSource hands out Slurm-style job ids, shared with the Slurm API's submissions
// (slurmapi/kube.JobIDs.Next), so a manifest workload is a job in squeue and sacct under
// an id no Slurm job has.
type JobIDSource func(ctx context.Context) (uint32, error)

// EnsurePodGroupWithID is EnsurePodGroup labelling a PodGroup it creates with a job id
// from ids (sluice.dev/job-id); nil ids leaves it without one. An id taken for a group
// another pod created first is skipped, a gap as Slurm's ids may have.
func EnsurePodGroupWithID(ctx context.Context, c client.Client, pod *corev1.Pod, ids JobIDSource) (*v1alpha1.PodGroup, error) {
	if derived(pod) {
		return ensureDerived(ctx, c, pod, ids)
	}
	if userNamed(pod) {
		return ensureNamed(ctx, c, pod, ids)
	}
	want, err := derive(ctx, c, pod, nil)
	if err != nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(want)
	have := &v1alpha1.PodGroup{}
	err = c.Get(ctx, key, have)
	if err == nil {
		return have, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading PodGroup %s: %w", key, err)
	}
	if err := numbered(ctx, want, ids); err != nil {
		return nil, err
	}
	if err = c.Create(ctx, want); err == nil {
		return want, nil
	}
	if apierrors.IsAlreadyExists(err) { // another pod of the group won the race
		if err = c.Get(ctx, key, have); err == nil {
			return have, nil
		}
	}
	return nil, fmt.Errorf("creating PodGroup %s: %w", key, err)
}

// derive computes pod's PodGroup from its owner chain; nsLabels nil reads the
// namespace when the pod and its owners name no queue.
func derive(ctx context.Context, c client.Reader, pod *corev1.Pod, nsLabels map[string]string) (*v1alpha1.PodGroup, error) {
	owners, err := ownerChain(ctx, c, pod)
	if err != nil {
		return nil, err
	}
	if nsLabels == nil && queueFromLabels(pod, owners) == "" {
		ns := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
			return nil, fmt.Errorf("reading namespace %s for its default queue: %w", pod.Namespace, err)
		}
		nsLabels = ns.Labels
	}
	pg, err := ForPod(pod, owners, nsLabels)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return pg, nil
}

// numbered labels a group about to be created with a job id from ids (none when nil).
func numbered(ctx context.Context, pg *v1alpha1.PodGroup, ids JobIDSource) error {
	if ids == nil {
		return nil
	}
	id, err := ids(ctx)
	if err != nil {
		return fmt.Errorf("a job id for PodGroup %s/%s: %w", pg.Namespace, pg.Name, err)
	}
	if pg.Labels == nil {
		pg.Labels = map[string]string{}
	}
	pg.Labels[v1alpha1.JobIDLabel] = v1alpha1.FormatJobID(id)
	return nil
}

// ownerChain reads pod's owners up to the top one, following controller
// references (else the first owner). The walk stops early, keeping what it
// has, at an owner that is gone, that this client may not read, or whose
// kind the API server does not serve: the group then forms around the
// highest owner that could be read.
func ownerChain(ctx context.Context, c client.Reader, pod *corev1.Pod) ([]*unstructured.Unstructured, error) {
	var chain []*unstructured.Unstructured
	refs := pod.OwnerReferences
	for len(chain) < maxOwnerDepth {
		ref := ControllerOf(refs)
		if ref == nil {
			break
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			break
		}
		owner := &unstructured.Unstructured{}
		owner.SetGroupVersionKind(gv.WithKind(ref.Kind))
		err = c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}, owner)
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || meta.IsNoMatchError(err) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s %s/%s, owner of pod %s: %w", ref.Kind, pod.Namespace, ref.Name, pod.Name, err)
		}
		if owner.GetUID() != ref.UID { // a namesake replaced the owner
			break
		}
		chain = append(chain, owner)
		refs = owner.GetOwnerReferences()
	}
	return chain, nil
}

// ControllerOf returns the controller reference among refs, else the first.
func ControllerOf(refs []metav1.OwnerReference) *metav1.OwnerReference {
	if ref := metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: refs}); ref != nil {
		return ref
	}
	if len(refs) > 0 {
		return &refs[0]
	}
	return nil
}
