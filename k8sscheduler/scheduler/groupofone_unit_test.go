package scheduler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Which PodGroup a group goes by: the written one, else the one its group of one implies.
func TestGroupEntryPodGroup(t *testing.T) {
	implied := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "implied"}}
	written := func(owner types.UID) *v1alpha1.PodGroup {
		return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "written",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: owner}}}}
	}
	one := &podEntry{name: "p", uid: "new", implied: implied}
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
		g := &groupEntry{pg: tt.pg, pods: map[string]*podEntry{}}
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
