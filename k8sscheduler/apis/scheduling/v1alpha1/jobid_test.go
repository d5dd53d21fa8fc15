package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOwningPod(t *testing.T) {
	for _, tc := range []struct {
		name   string
		owners []metav1.OwnerReference
		want   string
	}{
		{"a bare pod's group", []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u"}}, "p"},
		{"a Job's group", []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u"}}, ""},
		{"a Pod kind of another group", []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Pod", Name: "x"}}, ""},
		{"no owner", nil, ""},
	} {
		got := ""
		if o := OwningPod(&PodGroup{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tc.owners}}); o != nil {
			got = o.Name
		}
		if got != tc.want {
			t.Errorf("%s: owning pod %q, want %q", tc.name, got, tc.want)
		}
	}
}
