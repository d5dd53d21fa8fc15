package podgrouper

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// BenchmarkForPod measures grouping one pod of a Job (the common manifest
// case), which the scheduler does for every new pod it has not seen.
func BenchmarkForPod(b *testing.B) {
	owners := []*unstructured.Unstructured{job(b, "train", ptr.To[int32](8), nil, map[string]string{v1alpha1.QueueLabel: "nlp"})}
	p := pod("train-0", nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ForPod(p, owners, nil); err != nil {
			b.Fatal(err)
		}
	}
}
