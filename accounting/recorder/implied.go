package recorder

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A job may have no PodGroup object: the job model's identity (jobstate.Implied) gives
// the group its one bare pod stands for, with the key, job id and submit time a written
// one will have. The recorder records such a job from its first sight of the pod: when
// the group is written it takes over the same ledger row, and when it is deleted while
// the pod lives the implied group takes over again. Everything comes from the pods the
// recorder already watches: no API read per pod.

// impliedLocked is the group a pod linked to group key k implies, with that pod; nil when
// none does. One pod normally; should two claim the key, the first by name wins, so the
// answer does not depend on map order.
func (s *state) impliedLocked(k string) (*v1alpha1.PodGroup, *corev1.Pod) {
	var found *corev1.Pod
	var group *v1alpha1.PodGroup
	for pk := range s.links["group:"+k].all() {
		p := s.pods[pk]
		if p == nil || found != nil && p.Name >= found.Name {
			continue
		}
		if g := jobstate.Implied(p); g != nil {
			found, group = p, g
		}
	}
	return group, found
}

// endImpliedLocked closes the implied group of deleted pod p as a deleted PodGroup is
// closed: at the deletion, unless its pods already ended it. A written PodGroup is closed
// when it goes (the pod owns it, so the garbage collector follows).
func (s *state) endImpliedLocked(p *corev1.Pod) {
	ig := jobstate.Implied(p)
	if ig == nil {
		return
	}
	k := key(ig.Namespace, ig.Name)
	if s.groups[k] != nil || s.deleted[k] != nil {
		return
	}
	if at := jobstate.DeletionRequested(p); !at.IsZero() {
		ig.DeletionTimestamp = &metav1.Time{Time: at}
	}
	s.deleted[k] = ig
}
