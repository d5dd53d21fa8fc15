package v1alpha1

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FormatJobID writes a JobIDLabel value. The same text names the job elsewhere: an array's
// ArrayJobLabel, a submit batch's data key (SubmitBatchLabel).
func FormatJobID(id uint32) string { return strconv.FormatUint(uint64(id), 10) }

// ParseJobID reads a JobIDLabel value (or a text FormatJobID wrote): a decimal uint32.
func ParseJobID(value string) (uint32, error) {
	id, err := parseValue(JobIDLabel, value, func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 32) })
	return uint32(id), err
}

// JobIDOf reads JobIDLabel from labels: 0 when it is missing or not a positive number.
func JobIDOf(labels map[string]string) uint32 {
	id, _ := ParseJobID(labels[JobIDLabel])
	return id
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
