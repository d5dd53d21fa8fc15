package kube

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// TestCatalogAccountQOS: an account's QOS list and default come from its
// queue or the nearest ancestor that has them, as Slurm associations
// inherit their parent's.
func TestCatalogAccountQOS(t *testing.T) {
	queue := func(name, parent string, qos []string, def string, users ...string) v1alpha1.Queue {
		return v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.QueueSpec{ParentQueue: parent, QOS: qos, DefaultQOS: def, Users: users}}
	}
	tests := []struct {
		name     string
		queues   []v1alpha1.Queue
		wantList []string // of account "team"
		wantDef  string
	}{
		{"own list and default", []v1alpha1.Queue{queue("team", "", []string{"normal", "high"}, "high", "u")}, []string{"normal", "high"}, "high"},
		{"own list, no default: nothing chosen here", []v1alpha1.Queue{queue("team", "", []string{"low", "normal"}, "", "u")}, []string{"low", "normal"}, "low"},
		{"inherited list and default", []v1alpha1.Queue{queue("org", "", []string{"normal", "scavenger"}, "scavenger"), queue("team", "org", nil, "", "u")}, []string{"normal", "scavenger"}, "scavenger"},
		{"own default within the parent's list", []v1alpha1.Queue{queue("org", "", []string{"normal", "scavenger"}, "normal"), queue("team", "org", nil, "scavenger", "u")}, []string{"normal", "scavenger"}, "scavenger"},
		{"own list narrows the parent's", []v1alpha1.Queue{queue("org", "", []string{"normal", "high"}, "high"), queue("team", "org", []string{"normal"}, "", "u")}, []string{"normal"}, "normal"},
		{"no list anywhere: unrestricted", []v1alpha1.Queue{queue("org", "", nil, ""), queue("team", "org", nil, "", "u")}, nil, ""},
		{"a default without a list", []v1alpha1.Queue{queue("team", "", nil, "normal", "u")}, nil, "normal"},
		{"a parent loop ends the walk", []v1alpha1.Queue{queue("a", "team", nil, ""), queue("team", "a", nil, "", "u")}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cat := CatalogFrom(nil, tc.queues, nil)
			if got := cat.AccountQOS["team"]; !reflect.DeepEqual(got, tc.wantList) {
				t.Errorf("QOS list %v, want %v", got, tc.wantList)
			}
			if got := cat.DefaultQOS["team"]; got != tc.wantDef {
				t.Errorf("default QOS %q, want %q", got, tc.wantDef)
			}
		})
	}
}
