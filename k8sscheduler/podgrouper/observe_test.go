package podgrouper

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A fed controller queues only its schedulers' unbound pods that lack their group (or
// name a group of their user's not yet numbered), and
// forgets a queued pod once it is bound or being deleted (its worker then finds nothing).
func TestObserverQueuesOnlyPodsThatNeedAGroup(t *testing.T) {
	pod := func(name, scheduler, node string, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid")},
			Spec: corev1.PodSpec{SchedulerName: scheduler, NodeName: node}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	named := pod("named", "sluice", "", false)
	named.Annotations = map[string]string{v1alpha1.PodGroupAnnotation: "g"} // named by the user: to be numbered
	derived := pod("derived", "sluice", "", false)                          // named at admission: its group is to be made
	derived.Annotations = map[string]string{v1alpha1.PodGroupAnnotation: "derived", v1alpha1.PodGroupDerivedAnnotation: "true"}
	one := derived.DeepCopy() // numbered too: a group of one, whose PodGroup the scheduler writes if needed
	one.Labels = map[string]string{v1alpha1.JobIDLabel: "12"}
	cases := []struct {
		name     string
		events   []*corev1.Pod
		numbered []string // groups the controller already knows to be numbered
		queued   bool
	}{
		{"unbound pod of ours", []*corev1.Pod{pod("a", "sluice", "", false)}, nil, true},
		{"another scheduler's pod", []*corev1.Pod{pod("a", "default-scheduler", "", false)}, nil, false},
		{"bound before observed", []*corev1.Pod{pod("a", "sluice", "n1", false)}, nil, false},
		{"group named by the user, not yet numbered", []*corev1.Pod{named}, nil, true},
		{"group named by the user, numbered", []*corev1.Pod{named}, []string{"ns/g"}, false},
		{"group named at admission", []*corev1.Pod{derived}, nil, true},
		{"group of one", []*corev1.Pod{one}, nil, false},
		{"bound after queued", []*corev1.Pod{pod("a", "sluice", "", false), pod("a", "sluice", "n1", false)}, nil, false},
		{"deleted after queued", []*corev1.Pod{pod("a", "sluice", "", false), pod("a", "sluice", "", true)}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewController(&rest.Config{Host: "https://127.0.0.1:1"}, []string{"sluice"})
			if err != nil {
				t.Fatal(err)
			}
			defer g.queue.ShutDown()
			observe := g.Observer()
			for _, key := range tc.numbered {
				g.remember(key)
			}
			for _, p := range tc.events {
				observe(p)
			}
			last := tc.events[len(tc.events)-1]
			got := g.fedPod(types.NamespacedName{Namespace: last.Namespace, Name: last.Name}) != nil
			if got != tc.queued {
				t.Errorf("pending after %d events: %v, want %v", len(tc.events), got, tc.queued)
			}
		})
	}
}
