package v1alpha1

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestQueueAccess(t *testing.T) {
	team := func(v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"team": v}}
	}
	queue := func(name string, sel *metav1.LabelSelector) *Queue {
		return &Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: QueueSpec{NamespaceSelector: sel}}
	}
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Like"}}}
	for _, tc := range []struct {
		name      string
		q         *Queue
		namespace string
		labels    map[string]string
		want      bool
		refusal   string // part of the refusal when not admitted
	}{
		{"unset admits no namespace", queue("nlp", nil), "ml", map[string]string{"team": "nlp"}, false, "has no spec.namespaceSelector"},
		{"unset still admits its Slurm namespace", queue("nlp", nil), "slurm-nlp", nil, true, ""},
		{"another queue's Slurm namespace is not admitted", queue("nlp", team("nlp")), "slurm-vision", nil, false, `does not match`},
		{"empty selector admits every namespace", queue("default", &metav1.LabelSelector{}), "anything", nil, true, ""},
		{"matching labels admit", queue("nlp", team("nlp")), "ml", map[string]string{"team": "nlp"}, true, ""},
		{"other labels do not", queue("nlp", team("nlp")), "ml", map[string]string{"team": "vision"}, false, `team=nlp`},
		{"an invalid selector admits none", queue("nlp", bad), "ml", map[string]string{"team": "nlp"}, false, "invalid spec.namespaceSelector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := AccessOf(tc.q)
			if got := a.Admits(tc.namespace, tc.labels); got != tc.want {
				t.Fatalf("Admits(%q, %v) = %v, want %v", tc.namespace, tc.labels, got, tc.want)
			}
			if !tc.want {
				msg := a.Refusal(tc.namespace, []string{"default", "vision"})
				for _, part := range []string{tc.refusal, tc.q.Name, tc.namespace, "queues this namespace may use: default, vision"} {
					if !strings.Contains(msg, part) {
						t.Errorf("refusal %q does not say %q", msg, part)
					}
				}
			}
		})
	}
}

func TestAdmittingQueues(t *testing.T) {
	accesses := []QueueAccess{
		AccessOf(&Queue{ObjectMeta: metav1.ObjectMeta{Name: "vision"}, Spec: QueueSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "vision"}}}}),
		AccessOf(&Queue{ObjectMeta: metav1.ObjectMeta{Name: "nlp"}}),
		AccessOf(&Queue{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: QueueSpec{NamespaceSelector: &metav1.LabelSelector{}}}),
	}
	if got := AdmittingQueues(accesses, "cv", map[string]string{"team": "vision"}); !slices.Equal(got, []string{"default", "vision"}) {
		t.Errorf("queues for a vision namespace: %v", got)
	}
	if got := AdmittingQueues(accesses, "slurm-nlp", nil); !slices.Equal(got, []string{"default", "nlp"}) {
		t.Errorf("queues for slurm-nlp: %v", got)
	}
	if msg := accesses[1].Refusal("x", nil); !strings.Contains(msg, "no queue admits this namespace") {
		t.Errorf("refusal with no queue to offer: %q", msg)
	}
}
