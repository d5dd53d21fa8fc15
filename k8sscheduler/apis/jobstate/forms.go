package jobstate

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// The three forms a job's group takes (Kind) are told apart here and nowhere else: a
// stored PodGroup object, a pending Slurm job held as JSON in its submit batch
// (v1alpha1.SubmitBatchLabel), and the group a bare pod implies (a group of one).

// A group of one is a bare pod (no owner) whose PodGroup the webhook named and numbered
// at admission: v1alpha1.PodGroupAnnotation with v1alpha1.PodGroupDerivedAnnotation, and a job id in
// v1alpha1.JobIDLabel. Everything its PodGroup would say is on the pod, so the PodGroup is written
// only when it has something to say that the pod cannot: when the pod has to wait (its
// why-pending condition) or is evicted (the Evicted condition). A pod placed at once never
// has one, which spares the API server a custom-resource create per pod, about as costly
// as the pod's own create. Until it is written, ImpliedPodGroup stands for it, for the
// scheduler, the ledger and squeue alike.

// GroupOfOne reports whether pod is a group of one.
func GroupOfOne(pod *corev1.Pod) bool {
	return len(pod.OwnerReferences) == 0 && pod.Annotations[v1alpha1.PodGroupAnnotation] != "" &&
		pod.Annotations[v1alpha1.PodGroupDerivedAnnotation] == "true" && v1alpha1.JobIDOf(pod.Labels) > 0
}

// ImpliedPodGroup is the PodGroup a group of one stands for: the one the scheduler writes
// when it first has to (namespace, name, job id, owner and spec as they will be written;
// submitted when the pod was created). Only for a pod GroupOfOne accepts.
func ImpliedPodGroup(pod *corev1.Pod) *v1alpha1.PodGroup {
	queue := pod.Labels[v1alpha1.QueueLabel]
	if queue == "" {
		queue = pod.Labels[v1alpha1.KAIQueueLabel]
	}
	if queue == "" {
		queue = v1alpha1.DefaultQueue
	}
	partition := pod.Labels[v1alpha1.PartitionLabel]
	if partition == "" {
		partition = pod.Spec.NodeSelector[v1alpha1.PartitionLabel]
	}
	annotations := map[string]string{v1alpha1.SubmitTimeAnnotation: v1alpha1.FormatSubmitTime(pod.CreationTimestamp.Time)}
	if r := v1alpha1.ReservationOf(pod.Labels, pod.Annotations); r != "" {
		annotations[v1alpha1.ReservationAnnotation] = r
	}
	return &v1alpha1.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Annotations[v1alpha1.PodGroupAnnotation], Namespace: pod.Namespace,
			Labels:      map[string]string{v1alpha1.JobIDLabel: pod.Labels[v1alpha1.JobIDLabel]},
			Annotations: annotations,
			// Owned by the pod, so it goes with it, as the pod grouper's groups do.
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
			CreationTimestamp: pod.CreationTimestamp,
		},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: queue, Partition: partition, PriorityClassName: pod.Spec.PriorityClassName},
	}
}

// BatchedPodGroup decodes the job stored under key (its job id) in batch cm: a PodGroup
// never stored, so with no resourceVersion, UID or status.
func BatchedPodGroup(cm *corev1.ConfigMap, key string) (*v1alpha1.PodGroup, error) {
	var pg v1alpha1.PodGroup
	if err := json.Unmarshal([]byte(cm.Data[key]), &pg); err != nil {
		return nil, fmt.Errorf("batch %s job %s: %w", cm.Name, key, err)
	}
	if pg.Labels[v1alpha1.JobIDLabel] != key {
		return nil, fmt.Errorf("batch %s holds under key %s the job %q", cm.Name, key, pg.Labels[v1alpha1.JobIDLabel])
	}
	pg.ResourceVersion, pg.UID = "", ""
	return &pg, nil
}

// IsStored reports whether pg is an object the API server holds. A job read from its
// submit batch (BatchedPodGroup) and the group a bare pod implies (ImpliedPodGroup)
// are not: they have no resourceVersion, and a write to them must create them first.
func IsStored(pg *v1alpha1.PodGroup) bool { return pg.ResourceVersion != "" }

// IsBatched reports whether pg is a Slurm job read from its submit batch, not stored yet.
func IsBatched(pg *v1alpha1.PodGroup) bool { return !IsStored(pg) && pg.Spec.Slurm != nil }

// EncodeBatched is job pg as its submit batch holds it, under its job id.
func EncodeBatched(pg *v1alpha1.PodGroup) ([]byte, error) { return json.Marshal(pg) }

// BatchedJobs decodes every job batch cm holds, by job id. An entry that does not decode
// is left out and reported in errs: the submit queue stores it as a failed job.
func BatchedJobs(cm *corev1.ConfigMap) (jobs map[string]*v1alpha1.PodGroup, errs []error) {
	jobs = make(map[string]*v1alpha1.PodGroup, len(cm.Data))
	for key := range cm.Data {
		pg, err := BatchedPodGroup(cm, key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		jobs[key] = pg
	}
	return jobs, errs
}
