package kai

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// SluicePodGroup is the Sluice PodGroup a KAI PodGroup becomes: the same namespace and
// name (a pod's pod-group-name annotation becomes sluice.dev/pod-group with the same
// value), its gang size, queue, priority class, preemptibility and topology levels, and an
// owner reference to the KAI PodGroup, so deleting that deletes this. A PodGroup without a
// queue goes to Sluice's default queue, as KAI's pod grouper gives such a group its
// default queue.
func SluicePodGroup(pg *PodGroup) (*v1alpha1.PodGroup, error) {
	s := pg.Spec
	queue := s.Queue
	if queue == "" {
		queue = v1alpha1.DefaultQueue
	}
	if len(queue) > 63 || !queueName.MatchString(queue) {
		return nil, fmt.Errorf("KAI PodGroup %s/%s: queue %q is not a Sluice queue name (a DNS label)", pg.Namespace, pg.Name, queue)
	}
	pre := v1alpha1.Preemptibility(s.Preemptibility)
	if pre != "" && pre != v1alpha1.Preemptible && pre != v1alpha1.NonPreemptible {
		return nil, fmt.Errorf("KAI PodGroup %s/%s: preemptibility %q: want %s or %s", pg.Namespace, pg.Name, pre, v1alpha1.Preemptible, v1alpha1.NonPreemptible)
	}
	var ann map[string]string
	for key, level := range map[string]string{
		v1alpha1.TopologyRequiredAnnotation:  s.TopologyConstraint.RequiredTopologyLevel,
		v1alpha1.TopologyPreferredAnnotation: s.TopologyConstraint.PreferredTopologyLevel,
	} {
		if level != "" {
			if ann == nil {
				ann = map[string]string{}
			}
			ann[key] = level
		}
	}
	return &v1alpha1.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{
			Name: pg.Name, Namespace: pg.Namespace, Annotations: ann,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: PodGroupsGVR.GroupVersion().String(), Kind: "PodGroup", Name: pg.Name, UID: pg.UID,
			}},
		},
		Spec: v1alpha1.PodGroupSpec{
			MinMember:         max(1, s.MinMember),
			Queue:             queue,
			PriorityClassName: s.PriorityClassName,
			Preemptibility:    pre,
		},
	}, nil
}
