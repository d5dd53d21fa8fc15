package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Which PodGroup a group goes by: the written one, else the one its group of one implies.
func TestGroupEntryPodGroup(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "new",
		Annotations: map[string]string{v1alpha1.PodGroupAnnotation: "implied"}}}
	written := func(owner types.UID) *v1alpha1.PodGroup {
		return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "written",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: owner}}}}
	}
	one := &podEntry{name: "p", uid: "new", oneOf: pod}
	plain := &podEntry{name: "q", uid: "q-uid"}
	tests := []struct {
		name string
		pg   *v1alpha1.PodGroup
		pods []*podEntry
		want string // name of the PodGroup used, "" for none
	}{
		{"group of one, nothing written", nil, []*podEntry{one}, "implied"},
		{"group of one, its PodGroup written", written("new"), []*podEntry{one}, "written"},
		{"other pod, nothing written", nil, []*podEntry{plain}, ""},
		{"other pod, PodGroup written", written("old"), []*podEntry{plain}, "written"},
		{"two pods name the group", nil, []*podEntry{one, plain}, ""},
	}
	for _, tt := range tests {
		g := &groupEntry{pg: tt.pg}
		for _, p := range tt.pods {
			g.putPod(p)
		}
		got := ""
		if pg := g.podGroup(); pg != nil {
			got = pg.Name
		}
		if got != tt.want {
			t.Errorf("%s: uses %q, want %q", tt.name, got, tt.want)
		}
		if g.implied() != (tt.want == "implied") {
			t.Errorf("%s: implied() = %v", tt.name, g.implied())
		}
	}
}

// A group of one's PodGroup is made from its pod when asked for, once per version of the
// pod, and not kept when the pod goes.
func TestImpliedPodGroupMadeWhenAskedFor(t *testing.T) {
	version := func(queue string) *podEntry {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u",
			Labels: map[string]string{v1alpha1.QueueLabel: queue}, Annotations: map[string]string{v1alpha1.PodGroupAnnotation: "p-pg"}}}
		return &podEntry{name: "p", uid: "u", oneOf: pod}
	}
	g := &groupEntry{}
	g.putPod(version("a"))
	first := g.podGroup()
	if first == nil || first.Spec.Queue != "a" || first.Name != "p-pg" {
		t.Fatalf("implied PodGroup %+v, want p-pg in queue a", first)
	}
	if again := g.podGroup(); again != first {
		t.Error("the implied PodGroup was made again for the same version of the pod")
	}
	g.putPod(version("b"))
	if pg := g.podGroup(); pg == first || pg.Spec.Queue != "b" {
		t.Errorf("after the pod changed: %+v, want a new PodGroup in queue b", pg)
	}
	g.dropPod("p")
	if g.podGroup() != nil || g.impliedPG != nil {
		t.Error("the implied PodGroup outlived its pod")
	}
}
