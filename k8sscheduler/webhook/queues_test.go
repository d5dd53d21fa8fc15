package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A pod naming a queue its namespace may not use is refused, with the queues it may use;
// no job id is taken for it. Queues the webhook does not know yet are left to the
// scheduler.
func TestAdmitRefusesQueuesTheNamespaceMayNotUse(t *testing.T) {
	namespaces := map[string]map[string]string{
		"ml":        {"team": "nlp"},
		"cv":        {"team": "vision", v1alpha1.QueueLabel: "vision"},
		"slurm-nlp": nil,
		"stranger":  nil,
	}
	queues := &queueIndex{byName: map[string]v1alpha1.QueueAccess{}}
	for _, q := range []*v1alpha1.Queue{
		{ObjectMeta: metav1.ObjectMeta{Name: "nlp"}, Spec: v1alpha1.QueueSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "nlp"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "vision"}, Spec: v1alpha1.QueueSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "vision"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1alpha1.QueueSpec{NamespaceSelector: &metav1.LabelSelector{}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "closed"}},
	} {
		queues.byName[q.Name] = v1alpha1.AccessOf(q)
	}
	tests := []struct {
		name, namespace, queue string // queue "" names none
		wantQueue              string // "" when refused
		wantMessage            []string
	}{
		{"the team's namespace uses its queue", "ml", "nlp", "nlp", nil},
		{"another team's queue is refused", "ml", "vision", "", []string{`queue "vision" does not admit namespace "ml"`, "team=vision", "queues this namespace may use: default, nlp"}},
		{"the namespace's own queue label is checked too", "cv", "", "vision", nil},
		{"a queue open to all", "stranger", "default", "default", nil},
		{"a queue nobody opened", "stranger", "closed", "", []string{"has no spec.namespaceSelector", "queues this namespace may use: default"}},
		{"the account's Slurm namespace", "slurm-nlp", "nlp", "nlp", nil},
		{"another account's Slurm namespace", "slurm-nlp", "vision", "", []string{`does not admit namespace "slurm-nlp"`}},
		{"a queue not known yet is left to the scheduler", "stranger", "future", "future", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := testAdmitter(t, func(_ context.Context, name string) (*corev1.Namespace, error) {
				labels, ok := namespaces[name]
				if !ok {
					return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
				}
				return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, nil
			})
			a.queues = queues
			taken := 0
			a.jobIDs = func(context.Context) (uint32, error) { taken++; return 7, nil }
			pod := namedPod("eval", nil, nil)
			pod.Namespace = tt.namespace
			if tt.queue != "" {
				pod.Labels = map[string]string{v1alpha1.QueueLabel: tt.queue}
			}
			resp, got := admitPod(t, serveAdmitter(t, a), pod)
			if tt.wantQueue != "" {
				if !resp.Allowed || got.Labels[v1alpha1.QueueLabel] != tt.wantQueue {
					t.Fatalf("allowed %v, queue %q; want admitted to %q (%v)", resp.Allowed, got.Labels[v1alpha1.QueueLabel], tt.wantQueue, resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusForbidden || resp.Result.Reason != metav1.StatusReasonForbidden {
				t.Fatalf("want a 403 Forbidden refusal, got allowed=%v %+v", resp.Allowed, resp.Result)
			}
			for _, part := range tt.wantMessage {
				if !strings.Contains(resp.Result.Message, part) {
					t.Errorf("message %q does not say %q", resp.Result.Message, part)
				}
			}
			if taken != 0 {
				t.Errorf("a refused pod took %d job ids", taken)
			}
		})
	}
}
