package podgrouper

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A PodGroup a user writes (kubectl apply of a scheduling.sluice.dev PodGroup, with pods
// naming it in sluice.dev/pod-group) is a job like one a Job's pods imply: it gets a job
// id from the same counter, so squeue, job/{id} and sacct list it under a Slurm id. Users
// cannot write the id themselves (the owned-metadata policy refuses sluice.dev/ labels),
// so the pod grouper numbers the group the first time one of its pods asks to be placed.

// userNamed reports whether pod names its group itself rather than through the webhook.
func userNamed(pod *corev1.Pod) bool {
	return pod.Annotations[v1alpha1.PodGroupAnnotation] != "" && !derived(pod)
}

// userGroupKey names the group pod names, for remembering that it is numbered.
func userGroupKey(pod *corev1.Pod) string {
	return pod.Namespace + "/" + pod.Annotations[v1alpha1.PodGroupAnnotation]
}

// ensureNamed reads the group pod names and numbers it when it has no job id yet. A Slurm
// job's group is numbered by the REST API. The label is written with the version read,
// so two pods of one gang cannot number it twice: the loser reads the winner's id (its
// own id is a gap, as Slurm's ids may have).
func ensureNamed(ctx context.Context, c client.Client, pod *corev1.Pod, ids JobIDSource) (*v1alpha1.PodGroup, error) {
	key := client.ObjectKey{Namespace: pod.Namespace, Name: pod.Annotations[v1alpha1.PodGroupAnnotation]}
	for range 3 {
		pg := &v1alpha1.PodGroup{}
		err := c.Get(ctx, key, pg)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("pod %s/%s names PodGroup %q in annotation %s, which does not exist",
				pod.Namespace, pod.Name, key.Name, v1alpha1.PodGroupAnnotation)
		}
		if err != nil {
			return nil, fmt.Errorf("reading PodGroup %s: %w", key, err)
		}
		if ids == nil || pg.Spec.Slurm != nil || v1alpha1.JobIDOf(pg.Labels) != 0 || pg.DeletionTimestamp != nil {
			return pg, nil
		}
		before := pg.DeepCopy()
		if err := numbered(ctx, pg, ids); err != nil {
			return nil, err
		}
		err = c.Patch(ctx, pg, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			return pg, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("numbering PodGroup %s: %w", key, err)
		}
	}
	return nil, fmt.Errorf("PodGroup %s keeps changing while it is numbered", key)
}
