package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A bare pod admitted with an id source is numbered, which makes it a group of one; owned
// pods, unnamed pods and dry runs take no id, and a failing source leaves the pod to the
// pod grouper instead of refusing it.
func TestAdmitNumbersBarePods(t *testing.T) {
	job := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "0f1e2d3c-aaaa", Controller: new(true)}}
	tests := []struct {
		name       string
		pod        func() *corev1.Pod
		dryRun     bool
		failIDs    bool
		wantID     string
		groupOfOne bool
	}{
		{"bare pod", func() *corev1.Pod { return namedPod("eval-1", nil, nil) }, false, false, "41", true},
		{"bare pod without labels", func() *corev1.Pod {
			p := namedPod("eval-2", nil, nil)
			p.Labels = nil
			return p
		}, false, false, "41", true},
		{"a job id the user set is replaced", func() *corev1.Pod {
			return namedPod("eval-3", map[string]string{v1alpha1.JobIDLabel: "7"}, nil)
		}, false, false, "41", true},
		{"owned pod", func() *corev1.Pod { return namedPod("train-abc", nil, job) }, false, false, "", false},
		{"generateName only", func() *corev1.Pod { return podSpec{}.pod("nlp-team") }, false, false, "", false},
		{"dry run", func() *corev1.Pod { return namedPod("eval-4", nil, nil) }, true, false, "", false},
		{"no id to be had", func() *corev1.Pod { return namedPod("eval-5", nil, nil) }, false, true, "", false},
		{"no id to be had: the user's made-up one is removed", func() *corev1.Pod {
			return namedPod("eval-6", map[string]string{v1alpha1.JobIDLabel: "7"}, nil)
		}, false, true, "", false},
		{"dry run: the user's made-up one is removed", func() *corev1.Pod {
			return namedPod("eval-7", map[string]string{v1alpha1.JobIDLabel: "7"}, nil)
		}, true, false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := testAdmitter(t, nil)
			taken := 0
			a.jobIDs = func(context.Context) (uint32, error) {
				taken++
				if tt.failIDs {
					return 0, errors.New("counter unavailable")
				}
				return 41, nil
			}
			srv := serveAdmitter(t, a)
			pod := tt.pod()
			resp, got := admitReview(t, srv, pod, tt.dryRun)
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			if id := got.Labels[v1alpha1.JobIDLabel]; id != tt.wantID {
				t.Errorf("job id label %q, want %q", id, tt.wantID)
			}
			if g := jobstate.GroupOfOne(got); g != tt.groupOfOne {
				t.Errorf("group of one %v, want %v", g, tt.groupOfOne)
			}
			if tt.dryRun && taken != 0 {
				t.Errorf("a dry run took %d job ids", taken)
			}
			if got.Labels[v1alpha1.QueueLabel] != "nlp" {
				t.Errorf("queue label %q, want nlp (the namespace's)", got.Labels[v1alpha1.QueueLabel])
			}
		})
	}
}

func namedPod(name string, labels map[string]string, owners []metav1.OwnerReference) *corev1.Pod {
	p := podSpec{labels: labels}.pod("nlp-team")
	p.GenerateName, p.Name, p.OwnerReferences = "", name, owners
	return p
}

// admitReview is admitPod with the request's dryRun flag set as given.
func admitReview(t *testing.T, srv *httptest.Server, pod *corev1.Pod, dryRun bool) (*admissionv1.AdmissionResponse, *corev1.Pod) {
	t.Helper()
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(reviewFor(t, pod, admissionv1.Create), &review); err != nil {
		t.Fatal(err)
	}
	review.Request.DryRun = &dryRun
	return admitRequest(t, srv, pod, mustJSON(t, review))
}
