// Package podgrouper decides which PodGroup (gang) a pod belongs to, from
// the pod's owner chain, and creates that PodGroup once per group.
//
// Owners are read as unstructured objects, so workloads whose CRDs are not
// installed here (JobSet, Kubeflow jobs, Ray, LeaderWorkerSet, Argo) need
// no Go types and no scheme registration.
package podgrouper

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// uidChars is how much of the owner's UID goes into a PodGroup name: enough
// that a workload deleted and recreated under the same name gets a new
// group rather than its predecessor's, which garbage collection may not
// have removed yet.
const uidChars = 8

// ForPod computes the PodGroup of pod. owners is the pod's owner chain,
// nearest owner first and top owner last (empty for a bare pod);
// namespaceLabels are the labels of the pod's namespace, consulted for a
// default queue. It reads nothing from a cluster.
func ForPod(pod *corev1.Pod, owners []*unstructured.Unstructured, namespaceLabels map[string]string) (*v1alpha1.PodGroup, error) {
	key, err := groupKey(pod, owners)
	if err != nil {
		return nil, err
	}
	queue := queueFromLabels(pod, owners)
	if queue == "" {
		queue = queueLabel(namespaceLabels)
	}
	if queue == "" {
		queue = v1alpha1.DefaultQueue
	}
	var annotations map[string]string
	if r := reservationOf(pod, owners); r != "" {
		annotations = map[string]string{v1alpha1.ReservationAnnotation: r}
	}
	return &v1alpha1.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            key.name,
			Namespace:       pod.Namespace,
			OwnerReferences: []metav1.OwnerReference{key.owner},
			Annotations:     annotations,
		},
		Spec: v1alpha1.PodGroupSpec{
			MinMember:         key.minMember,
			Queue:             queue,
			Partition:         partitionOf(pod, owners),
			PriorityClassName: priorityClassOf(pod, owners),
			Preemptibility:    preemptibilityOf(pod, owners),
		},
	}, nil
}

// queueFromLabels returns the queue named on the pod or its nearest owner
// that names one, or "" if none does.
func queueFromLabels(pod *corev1.Pod, owners []*unstructured.Unstructured) string {
	if q := queueLabel(pod.Labels); q != "" {
		return q
	}
	for _, o := range owners {
		if q := queueLabel(o.GetLabels()); q != "" {
			return q
		}
	}
	return ""
}

// reservationOf returns the reservation named on the pod or its nearest owner that names
// one (v1alpha1.ReservationOf), or "": a Job's template labels reach its pods, the Job's own
// labels and annotations only its PodGroup, through here.
func reservationOf(pod *corev1.Pod, owners []*unstructured.Unstructured) string {
	if r := v1alpha1.ReservationOf(pod.Labels, pod.Annotations); r != "" {
		return r
	}
	for _, o := range owners {
		if r := v1alpha1.ReservationOf(o.GetLabels(), o.GetAnnotations()); r != "" {
			return r
		}
	}
	return ""
}

// queueLabel reads Sluice's queue label, else KAI's.
func queueLabel(labels map[string]string) string {
	if q := labels[v1alpha1.QueueLabel]; q != "" {
		return q
	}
	return labels[v1alpha1.KAIQueueLabel]
}

// partitionOf returns the partition named by the partition label on the pod
// or its nearest owner, else by the pod's node selector, else "".
func partitionOf(pod *corev1.Pod, owners []*unstructured.Unstructured) string {
	if p := pod.Labels[v1alpha1.PartitionLabel]; p != "" {
		return p
	}
	for _, o := range owners {
		if p := o.GetLabels()[v1alpha1.PartitionLabel]; p != "" {
			return p
		}
	}
	return pod.Spec.NodeSelector[v1alpha1.PartitionLabel]
}

// groupName is the one rule that names a derived PodGroup: the workload's name, then what
// is unique to that workload, so no two workloads ever share a group name and no reader
// has to tell a group from a namesake left by an earlier workload of the same name
// (garbage collection may not have removed it yet): the start of the workload's UID, or,
// for a bare pod named at admission before the API server gives it a UID, the job id the
// webhook gives it (GroupOfOneName). A suffix tells apart the groups of one owner. ""
// when there is nothing unique to name it by.
func groupName(ownerName, unique, suffix string) string {
	if unique == "" {
		return ""
	}
	tail := "-" + unique
	if suffix != "" {
		tail += "-" + suffix
	}
	const maxName = 253
	if len(ownerName)+len(tail) > maxName {
		ownerName = strings.TrimRight(ownerName[:maxName-len(tail)], ".-")
	}
	return ownerName + tail
}

// uidPart is the unique part a UID gives a group name ("" for no UID yet).
func uidPart(uid types.UID) string { return string(uid)[:min(uidChars, len(uid))] }

// GroupOfOneName names the group of a bare pod the webhook numbered with jobID: the
// pod's name and "job" with the id, which no UID's hex start can equal.
func GroupOfOneName(podName string, jobID uint32) string {
	return groupName(podName, "job"+strconv.FormatUint(uint64(jobID), 10), "")
}

func ownerRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid}
}

// fieldError reports an owner field of the wrong type, naming the object
// so the Event on the pod says what to fix.
func fieldError(o *unstructured.Unstructured, err error) error {
	return fmt.Errorf("%s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
}
