package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// AddToScheme makes every kind of the group known under scheduling.sluice.dev/v1alpha1,
// as clients need to read and write them.
func TestAddToSchemeKnowsEveryKind(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for kind, obj := range map[string]runtime.Object{"Queue": &Queue{}, "QueueList": &QueueList{}, "PodGroup": &PodGroup{},
		"PodGroupList": &PodGroupList{}, "Partition": &Partition{}, "PartitionList": &PartitionList{}, "QOS": &QOS{}, "QOSList": &QOSList{}} {
		gvks, _, err := s.ObjectKinds(obj)
		if err != nil || len(gvks) != 1 || gvks[0] != GroupVersion.WithKind(kind) {
			t.Errorf("%s: %v (%v), want %v", kind, gvks, err, GroupVersion.WithKind(kind))
		}
	}
}
