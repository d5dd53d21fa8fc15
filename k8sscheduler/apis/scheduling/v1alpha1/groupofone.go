package v1alpha1

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A group of one is a bare pod (no owner) whose PodGroup the webhook named and numbered
// at admission: PodGroupAnnotation with PodGroupDerivedAnnotation, and a job id in
// JobIDLabel. Everything its PodGroup would say is on the pod, so the PodGroup is written
// only when it has something to say that the pod cannot: when the pod has to wait (its
// why-pending condition) or is evicted (the Evicted condition). A pod placed at once never
// has one, which spares the API server a custom-resource create per pod, about as costly
// as the pod's own create. Until it is written, ImpliedPodGroup stands for it, for the
// scheduler, the ledger and squeue alike.

// GroupOfOne reports whether pod is a group of one.
func GroupOfOne(pod *corev1.Pod) bool {
	return len(pod.OwnerReferences) == 0 && pod.Annotations[PodGroupAnnotation] != "" &&
		pod.Annotations[PodGroupDerivedAnnotation] == "true" && JobIDOf(pod.Labels) > 0
}

// JobIDOf reads JobIDLabel from labels: 0 when it is missing or not a positive number.
func JobIDOf(labels map[string]string) uint32 {
	id, err := strconv.ParseUint(labels[JobIDLabel], 10, 32)
	if err != nil {
		return 0
	}
	return uint32(id)
}

// OwningPod is the owner reference of the bare pod that owns pg (a group of one's written
// PodGroup, or the pod grouper's group of a bare pod); nil when no pod owns it.
func OwningPod(pg *PodGroup) *metav1.OwnerReference {
	for i := range pg.OwnerReferences {
		if o := &pg.OwnerReferences[i]; o.APIVersion == "v1" && o.Kind == "Pod" {
			return o
		}
	}
	return nil
}

// ImpliedPodGroup is the PodGroup a group of one stands for: the one the scheduler writes
// when it first has to (namespace, name, job id, owner and spec as they will be written;
// submitted when the pod was created). Only for a pod GroupOfOne accepts.
func ImpliedPodGroup(pod *corev1.Pod) *PodGroup {
	queue := pod.Labels[QueueLabel]
	if queue == "" {
		queue = pod.Labels[KAIQueueLabel]
	}
	if queue == "" {
		queue = DefaultQueue
	}
	partition := pod.Labels[PartitionLabel]
	if partition == "" {
		partition = pod.Spec.NodeSelector[PartitionLabel]
	}
	return &PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Annotations[PodGroupAnnotation], Namespace: pod.Namespace,
			Labels:      map[string]string{JobIDLabel: pod.Labels[JobIDLabel]},
			Annotations: map[string]string{SubmitTimeAnnotation: pod.CreationTimestamp.UTC().Format(time.RFC3339Nano)},
			// Owned by the pod, so it goes with it, as the pod grouper's groups do.
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
			CreationTimestamp: pod.CreationTimestamp,
		},
		Spec: PodGroupSpec{MinMember: 1, Queue: queue, Partition: partition, PriorityClassName: pod.Spec.PriorityClassName},
	}
}
