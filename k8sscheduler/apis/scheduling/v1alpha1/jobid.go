package v1alpha1

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
