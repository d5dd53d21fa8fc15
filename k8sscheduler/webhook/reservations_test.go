package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A pod naming a reservation is admitted only when the reservation lists its namespace
// or its queue; a tenant cannot get into another team's reservation by labelling a pod,
// whatever Slurm user it claims. The message says which reservation and why.
func TestAdmitChecksTheReservation(t *testing.T) {
	resvs := &reservationIndex{byName: map[string]*v1alpha1.Reservation{
		"class": {ObjectMeta: metav1.ObjectMeta{Name: "class"}, Spec: v1alpha1.ReservationSpec{Namespaces: []string{"ml"}}},
		"paper": {ObjectMeta: metav1.ObjectMeta{Name: "paper"}, Spec: v1alpha1.ReservationSpec{Accounts: []string{"vision"}}},
		"slurm": {ObjectMeta: metav1.ObjectMeta{Name: "slurm"}, Spec: v1alpha1.ReservationSpec{Users: []string{"alice"}}},
	}}
	tests := []struct {
		name        string
		namespace   string
		labels, ann map[string]string
		user        string
		wantMessage []string // nil: admitted
	}{
		{name: "no reservation", namespace: "ml"},
		{name: "its namespace is listed", namespace: "ml", labels: map[string]string{v1alpha1.ReservationAnnotation: "class"}},
		{name: "by annotation", namespace: "ml", ann: map[string]string{v1alpha1.ReservationAnnotation: "class"}},
		{name: "its queue is listed", namespace: "default",
			labels: map[string]string{v1alpha1.ReservationAnnotation: "paper", v1alpha1.QueueLabel: "vision"}},
		{name: "another namespace's", namespace: "default", labels: map[string]string{v1alpha1.ReservationAnnotation: "class"},
			wantMessage: []string{"reservation class does not admit namespace default or queue default", "namespaces [ml]"}},
		{name: "users are Slurm's to check", namespace: "ml", ann: map[string]string{v1alpha1.ReservationAnnotation: "slurm"},
			wantMessage: []string{"reservation slurm", "only Slurm users"}},
		{name: "one that does not exist", namespace: "ml", labels: map[string]string{v1alpha1.ReservationAnnotation: "nope"},
			wantMessage: []string{`reservation "nope" does not exist`}},
		{name: "a pod naming its group itself is checked too", namespace: "default",
			ann:         map[string]string{v1alpha1.ReservationAnnotation: "class", v1alpha1.PodGroupAnnotation: "mine"},
			wantMessage: []string{"reservation class does not admit namespace default"}},
		{name: "Sluice's own pods are the Slurm API's to check", namespace: "default", user: "system:serviceaccount:sluice:server",
			labels: map[string]string{v1alpha1.ReservationAnnotation: "slurm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := testAdmitter(t, func(_ context.Context, name string) (*corev1.Namespace, error) {
				return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
			})
			a.reservations = resvs
			a.self = []string{"system:serviceaccount:sluice:server"}
			pod := namedPod("eval", tt.labels, nil)
			pod.Namespace, pod.Annotations = tt.namespace, tt.ann
			review := reviewFor(t, pod, "CREATE")
			if tt.user != "" {
				review = governedReview(t, pod, nil, tt.user)
			}
			resp, got := admitRequest(t, serveAdmitter(t, a), pod, review)
			if tt.wantMessage == nil {
				if !resp.Allowed {
					t.Fatalf("refused: %v", resp.Result)
				}
				if v1alpha1.ReservationOf(pod.Labels, pod.Annotations) != v1alpha1.ReservationOf(got.Labels, got.Annotations) {
					t.Errorf("the reservation did not survive admission: %v %v", got.Labels, got.Annotations)
				}
				return
			}
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusForbidden {
				t.Fatalf("want a 403 refusal, got allowed=%v %+v", resp.Allowed, resp.Result)
			}
			for _, part := range tt.wantMessage {
				if !strings.Contains(resp.Result.Message, part) {
					t.Errorf("message %q does not say %q", resp.Result.Message, part)
				}
			}
		})
	}
}
