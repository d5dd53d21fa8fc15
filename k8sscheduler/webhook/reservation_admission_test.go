package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/resvcontroller"
)

// sluiceRequest is an admission request for obj, a kind of Sluice's, by user.
func sluiceRequest(t *testing.T, kind, namespace, user string, op admissionv1.Operation, obj, old any) *admissionv1.AdmissionRequest {
	t.Helper()
	req := &admissionv1.AdmissionRequest{UID: "uid", Namespace: namespace, Operation: op,
		Kind:     metav1.GroupVersionKind{Group: v1alpha1.GroupVersion.Group, Version: "v1alpha1", Kind: kind},
		UserInfo: authenticationv1.UserInfo{Username: user}, Object: runtime.RawExtension{Raw: mustJSON(t, obj)}}
	if old != nil {
		req.OldObject = runtime.RawExtension{Raw: mustJSON(t, old)}
	}
	return req
}

// The handler judges a Reservation against the world it reads; a world it cannot read
// refuses with 503 (try again), never admits unchecked.
func TestAdmitJudgesReservations(t *testing.T) {
	a := testAdmitter(t, nil)
	world := &reservationWorld{now: resvT0.Add(-time.Hour), nodes: []resvcontroller.Node{{Name: "h1"}},
		others:  []*v1alpha1.Reservation{testResv("class", 0, onNodes("h1"))},
		groupOf: func(*corev1.Pod) *v1alpha1.PodGroup { return nil }}
	var readErr error
	a.resvWorld = func(context.Context) (*reservationWorld, error) { return world, readErr }
	ctx := context.Background()

	resp := a.admit(ctx, sluiceRequest(t, "Reservation", "", "admin", admissionv1.Create, testResv("new", 0, onNodes("h1")), nil))
	if resp.Allowed || resp.Result.Code != http.StatusForbidden || !strings.HasPrefix(resp.Result.Message, slurmOverlap) {
		t.Errorf("overlapping create: %+v", resp.Result)
	}
	moved := testResv("class", 0, onNodes("h1"))
	moved.Spec.StartTime = metav1.NewTime(resvT0.Add(time.Hour))
	if resp := a.admit(ctx, sluiceRequest(t, "Reservation", "", "admin", admissionv1.Update, moved, world.others[0])); !resp.Allowed {
		t.Errorf("moving its own window: %+v", resp.Result)
	}
	readErr = errors.New("cache not synced")
	resp = a.admit(ctx, sluiceRequest(t, "Reservation", "", "admin", admissionv1.Create, testResv("other", 3*time.Hour, onNodes("h1")), nil))
	if resp.Allowed || resp.Result.Code != http.StatusServiceUnavailable {
		t.Errorf("unreadable world: %+v", resp.Result)
	}
}

// A PodGroup written by a tenant is refused, as a pod would be, when the reservation it
// names does not admit its namespace or queue, or its queue is not one the namespace
// may use (the reservation trusts only a checked queue). Sluice's own PodGroups are
// the Slurm API's and the grouper's, checked already.
func TestAdmitChecksAPodGroupsReservation(t *testing.T) {
	a := testAdmitter(t, func(_ context.Context, name string) (*corev1.Namespace, error) {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": name}}}, nil
	})
	a.self = []string{"sluice-server"}
	a.reservations = &reservationIndex{byName: map[string]*v1alpha1.Reservation{
		"paper": testResv("paper", 0, onNodes("h1")), // accounts [nlp]
	}}
	a.queues = &queueIndex{byName: map[string]v1alpha1.QueueAccess{}}
	for _, team := range []string{"nlp", "vision"} {
		a.queues.byName[team] = v1alpha1.AccessOf(&v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: team},
			Spec: v1alpha1.QueueSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}}}})
	}
	group := func(queue, resv string) *v1alpha1.PodGroup {
		pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Spec: v1alpha1.PodGroupSpec{Queue: queue, MinMember: 1}}
		if resv != "" {
			pg.Labels = map[string]string{v1alpha1.ReservationAnnotation: resv}
		}
		return pg
	}
	tests := []struct {
		name, namespace, user string
		pg                    *v1alpha1.PodGroup
		want                  string // "": admitted
	}{
		{"its own team's reservation", "nlp", "alice", group("nlp", "paper"), ""},
		{"another team's reservation", "vision", "mallory", group("vision", "paper"), "reservation paper does not admit namespace vision or queue vision"},
		{"claiming the admitted queue", "vision", "mallory", group("nlp", "paper"), `queue "nlp" does not admit namespace "vision"`},
		{"a reservation that does not exist", "nlp", "alice", group("nlp", "gone"), `reservation "gone" does not exist`},
		{"no reservation", "vision", "mallory", group("vision", ""), ""},
		{"Sluice's own", "vision", "sluice-server", group("vision", "paper"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := a.admit(context.Background(), sluiceRequest(t, "PodGroup", tt.namespace, tt.user, admissionv1.Create, tt.pg, nil))
			if tt.want == "" {
				if !resp.Allowed {
					t.Fatalf("refused: %+v", resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result.Code != http.StatusForbidden || !strings.Contains(resp.Result.Message, tt.want) {
				got, _ := json.Marshal(resp.Result)
				t.Errorf("got %s, want a 403 saying %q", got, tt.want)
			}
		})
	}
}
