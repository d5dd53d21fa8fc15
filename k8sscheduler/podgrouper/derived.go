package podgrouper

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Grouping at admission. The webhook names a pod's group when the pod is created
// (PodGroupDerivedAnnotation), so the pod grouper only has to create the group: the pod
// needs no patch, which saves one API write per pod, and the scheduler knows the pod's
// group from its first sight of it.

// AtAdmission is the group the webhook names on pod when it is created: the group
// EnsurePodGroup would derive, read with c (owners; the namespace is given). A bare pod's
// group comes back unnamed, since the pod has no UID yet: the webhook names it by the job
// id it gives the pod (GroupOfOneName). nil when the pod cannot be named yet (a bare pod
// with only generateName), so the grouper names it later as before.
func AtAdmission(ctx context.Context, c client.Reader, pod *corev1.Pod, nsLabels map[string]string) (*v1alpha1.PodGroup, error) {
	if pod.Annotations[v1alpha1.PodGroupAnnotation] != "" {
		return nil, nil // the user named it
	}
	if len(pod.OwnerReferences) == 0 && pod.Name == "" {
		return nil, nil
	}
	if nsLabels == nil {
		nsLabels = map[string]string{}
	}
	return derive(ctx, c, pod, nsLabels)
}

func derived(pod *corev1.Pod) bool {
	return pod.Annotations[v1alpha1.PodGroupAnnotation] != "" && pod.Annotations[v1alpha1.PodGroupDerivedAnnotation] == "true"
}

// ensureDerived creates the group the webhook named on pod, deriving its spec from the
// owners as EnsurePodGroup does. The create comes first (a pod of a new group finds
// none); a group already there is the pod's: derived names are never shared (groupName).
//
// A group of one gets exactly the PodGroup it implies, under the job id it already has.
func ensureDerived(ctx context.Context, c client.Client, pod *corev1.Pod, ids JobIDSource) (*v1alpha1.PodGroup, error) {
	if jobstate.GroupOfOne(pod) {
		ids = nil
	}
	want, err := derivedGroup(ctx, c, pod)
	if err != nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(want)
	for attempt := 0; attempt < 3; attempt++ {
		fresh := want.DeepCopy()
		if err := numbered(ctx, fresh, ids); err != nil {
			return nil, err
		}
		err := c.Create(ctx, fresh)
		if err == nil {
			return fresh, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating PodGroup %s: %w", key, err)
		}
		have := &v1alpha1.PodGroup{}
		if err := c.Get(ctx, key, have); apierrors.IsNotFound(err) {
			continue // deleted meanwhile
		} else if err != nil {
			return nil, fmt.Errorf("reading PodGroup %s: %w", key, err)
		}
		return have, nil
	}
	return nil, fmt.Errorf("PodGroup %s keeps changing while it is created", key)
}

// derivedGroup is the PodGroup the webhook named on pod, as it is to be created.
func derivedGroup(ctx context.Context, c client.Client, pod *corev1.Pod) (*v1alpha1.PodGroup, error) {
	if jobstate.GroupOfOne(pod) {
		return jobstate.ImpliedPodGroup(pod), nil
	}
	want, err := derive(ctx, c, pod, nil)
	if err != nil {
		return nil, err
	}
	want.Name = pod.Annotations[v1alpha1.PodGroupAnnotation]
	return want, nil
}
