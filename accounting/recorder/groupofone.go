package recorder

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A group of one (v1alpha1.GroupOfOne: a bare pod the webhook named and numbered) has
// no PodGroup until the scheduler has to write one, and most never do. The recorder
// records it from its first sight as the job of v1alpha1.ImpliedPodGroup, which carries
// the key, job id and submit time the written PodGroup will have: when that is written
// it takes over the same ledger row, and when it is deleted while the pod lives the
// implied group takes over again. Everything comes from the pods the recorder already
// watches: no API read per pod.

// groupOfOnePodLocked is the group-of-one pod of group key k the recorder sees, nil when
// there is none. One pod normally; should two claim the key, the first by name wins, so
// the answer does not depend on map order.
func (s *state) groupOfOnePodLocked(k string) *corev1.Pod {
	var found *corev1.Pod
	for pk := range s.links["group:"+k] {
		if p := s.pods[pk]; p != nil && v1alpha1.GroupOfOne(p) && (found == nil || p.Name < found.Name) {
			found = p
		}
	}
	return found
}

// impliedLocked is the PodGroup the group-of-one pod of key k stands for; nil when no
// such pod is seen.
func (s *state) impliedLocked(k string) *v1alpha1.PodGroup {
	p := s.groupOfOnePodLocked(k)
	if p == nil {
		return nil
	}
	return v1alpha1.ImpliedPodGroup(p)
}

// endGroupOfOneLocked closes the implied group of a deleted group-of-one pod as a deleted
// PodGroup is closed: at the deletion, unless its pods already ended it. A written
// PodGroup is closed when it goes (the pod owns it, so the garbage collector follows).
func (s *state) endGroupOfOneLocked(p *corev1.Pod) {
	k := key(p.Namespace, p.Annotations[v1alpha1.PodGroupAnnotation])
	if s.groups[k] != nil || s.deleted[k] != nil {
		return
	}
	ig := v1alpha1.ImpliedPodGroup(p)
	ig.DeletionTimestamp = deletionRequested(p)
	s.deleted[k] = ig
}

// deletionRequested is when a pod's deletion was asked for: its deletionTimestamp is
// that plus the grace period it was given; nil when the pod was removed without one.
func deletionRequested(p *corev1.Pod) *metav1.Time {
	if p.DeletionTimestamp == nil {
		return nil
	}
	at := p.DeletionTimestamp.Time
	if g := p.DeletionGracePeriodSeconds; g != nil {
		at = at.Add(-time.Duration(*g) * time.Second)
	}
	return &metav1.Time{Time: at}
}
