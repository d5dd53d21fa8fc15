package webhook

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/kai"
)

// What the webhook does for manifests written for KAI Scheduler (docs/kai-compatibility.md).

// schedulerNamePatch gives a pod that names one of the other schedulers Sluice takes
// (webhook.extraSchedulerNames, kai-scheduler in KAI mode) Sluice's own name, so the
// scheduler, the pod grouper and the ledger see one name. Only at creation, the one time
// spec.schedulerName may change.
func schedulerNamePatch(pod *corev1.Pod, sluice string) []patchOp {
	if pod.Spec.SchedulerName == sluice {
		return nil
	}
	pod.Spec.SchedulerName = sluice
	return []patchOp{{Op: "replace", Path: "/spec/schedulerName", Value: sluice}}
}

// kaiGroupPatch turns KAI's pod-group-name annotation into sluice.dev/pod-group (same
// name: the KAI mirror writes the Sluice PodGroup of a KAI PodGroup under its name),
// unless the pod names a Sluice group itself. pod's annotations are updated to match.
func kaiGroupPatch(pod *corev1.Pod) []patchOp {
	name := pod.Annotations[kai.PodGroupAnnotation]
	if name == "" || pod.Annotations[v1alpha1.PodGroupAnnotation] != "" {
		return nil
	}
	pod.Annotations[v1alpha1.PodGroupAnnotation] = name
	return []patchOp{{Op: "add", Path: "/metadata/annotations/" + escapePointer(v1alpha1.PodGroupAnnotation), Value: name}}
}

// priorityClassGetter reads a PriorityClass, or a NotFound error.
type priorityClassGetter func(ctx context.Context, name string) (*schedulingv1.PriorityClass, error)

// priorityPatch gives the pod the PriorityClass KAI's priorityClassName label names, on
// its workload (pg, the group derived from its owners, carries it) or on the pod itself:
// spec.priorityClassName, the class's value and preemption policy, as the API server's
// Priority admission would have set them had the pod named the class itself. A label
// naming no PriorityClass is ignored, as KAI ignores it; so is a failed read (the pod
// keeps the priority it has, and the reason is logged).
func (a *admitter) priorityPatch(ctx context.Context, pod *corev1.Pod, pg *v1alpha1.PodGroup) []patchOp {
	name := pod.Labels[kai.PriorityClassLabel]
	if pg != nil {
		name = pg.Spec.PriorityClassName
	}
	if name == "" || name == pod.Spec.PriorityClassName || a.priorityClass == nil {
		return nil
	}
	pc, err := a.priorityClass(ctx, name)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			a.log.Error(err, "webhook: reading the PriorityClass a priorityClassName label names", "class", name)
		}
		return nil
	}
	ops := []patchOp{
		{Op: "add", Path: "/spec/priorityClassName", Value: name},
		{Op: "add", Path: "/spec/priority", Value: pc.Value},
	}
	if pc.PreemptionPolicy != nil {
		ops = append(ops, patchOp{Op: "add", Path: "/spec/preemptionPolicy", Value: *pc.PreemptionPolicy})
	}
	return ops
}

// fractionContainer is the one container KAI's gpu-fraction-container-name annotation
// gives a pod's share of a GPU ("" when the pod names none: every container gets it), or
// why the annotation is refused.
func fractionContainer(pod *corev1.Pod, shared bool) (name, problem string) {
	name, set := pod.Annotations[kai.FractionContainerAnnotation]
	if !set {
		return "", ""
	}
	if !shared {
		return "", fmt.Sprintf("annotation %s=%q: only allowed together with %s or %s (it names the container that gets the share)",
			kai.FractionContainerAnnotation, name, v1alpha1.GPUFractionAnnotation, v1alpha1.GPUMemoryAnnotation)
	}
	var names []string
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				return name, ""
			}
			names = append(names, c.Name)
		}
	}
	return "", fmt.Sprintf("annotation %s=%q: the pod has no container of that name (it has %q)", kai.FractionContainerAnnotation, name, names)
}
