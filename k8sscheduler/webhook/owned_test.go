package webhook

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// What Sluice writes on a pod never comes from its author: a pod that arrives with a job
// id, a derived group mark, a GPU assignment or any other Sluice-owned key leaves
// admission without it (or with Sluice's own value), while what a user may ask for (queue,
// partition, an explicit PodGroup, the rig's simulated run time) stays.
func TestAdmitRemovesSluiceOwnedKeys(t *testing.T) {
	forged := map[string]string{
		v1alpha1.PodGroupAnnotation:        "x",
		v1alpha1.PodGroupDerivedAnnotation: "true",
		v1alpha1.GPUAssignmentAnnotation:   `[{"index":0}]`,
		v1alpha1.VisibleDevicesAnnotation:  "GPU-0,GPU-1",
		v1alpha1.GPUPortionAnnotation:      "1",
		v1alpha1.NodeFaultAnnotation:       "xid 79",
		v1alpha1.TaskGroupAnnotation:       "node",
		"sluice.dev/priority":              "1000000",
		v1alpha1.SimDurationAnnotation:     "5s",
		"example.com/mine":                 "kept",
	}
	tests := []struct {
		name            string
		pod             func() *corev1.Pod
		wantGroup       string
		wantID          string
		wantAnnotations map[string]string // beside the group marks
	}{
		{"a bare pod with a forged job id and group is numbered and grouped by Sluice", func() *corev1.Pod {
			p := namedPod("evil", map[string]string{v1alpha1.JobIDLabel: "2", "sluice.dev/slurm-job": "true", v1alpha1.PartitionLabel: "h100"}, nil)
			p.Annotations = maps.Clone(forged)
			return p
		}, "evil-job41", "41", map[string]string{v1alpha1.SimDurationAnnotation: "5s", "example.com/mine": "kept"}},
		{"an explicit group stays, but not the derived mark or a job id", func() *corev1.Pod {
			p := podSpec{labels: map[string]string{v1alpha1.JobIDLabel: "2"}}.pod("nlp-team")
			p.Annotations = map[string]string{v1alpha1.PodGroupAnnotation: "gang", v1alpha1.GPUPortionAnnotation: "1"}
			return p
		}, "gang", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := testAdmitter(t, nil)
			a.jobIDs = func(context.Context) (uint32, error) { return 41, nil }
			_, got := admitPod(t, serveAdmitter(t, a), tt.pod())
			if g := got.Annotations[v1alpha1.PodGroupAnnotation]; g != tt.wantGroup {
				t.Errorf("pod group %q, want %q", g, tt.wantGroup)
			}
			if id := got.Labels[v1alpha1.JobIDLabel]; id != tt.wantID {
				t.Errorf("job id %q, want %q", id, tt.wantID)
			}
			for k, v := range got.Labels {
				if v1alpha1.OwnedKey(k) && k != v1alpha1.JobIDLabel {
					t.Errorf("label %s=%s kept", k, v)
				}
			}
			if got.Labels[v1alpha1.PartitionLabel] != tt.pod().Labels[v1alpha1.PartitionLabel] {
				t.Errorf("partition label %q: the user's ask must stay", got.Labels[v1alpha1.PartitionLabel])
			}
			rest := maps.Clone(got.Annotations)
			delete(rest, v1alpha1.PodGroupAnnotation)
			if tt.wantID != "" && rest[v1alpha1.PodGroupDerivedAnnotation] != "true" {
				t.Errorf("a numbered bare pod lacks the derived mark: %v", got.Annotations)
			}
			delete(rest, v1alpha1.PodGroupDerivedAnnotation)
			if !maps.Equal(rest, tt.wantAnnotations) && !(len(rest) == 0 && len(tt.wantAnnotations) == 0) {
				t.Errorf("annotations %v, want %v beside the group", rest, tt.wantAnnotations)
			}
		})
	}
}

// When the API server calls the webhook again for the same pod (reinvocation after a later
// webhook changed it), the pod keeps the id the webhook gave it and takes no second one;
// the same id on another pod is not the webhook's and is replaced.
func TestAdmitReinvocationKeepsItsOwnJobID(t *testing.T) {
	a := testAdmitter(t, nil)
	next := uint32(40)
	a.jobIDs = func(context.Context) (uint32, error) { next++; return next, nil }
	srv := serveAdmitter(t, a)
	_, first := admitPod(t, srv, namedPod("eval", nil, nil))
	if first.Labels[v1alpha1.JobIDLabel] != "41" {
		t.Fatalf("first call: job id %q, want 41", first.Labels[v1alpha1.JobIDLabel])
	}
	_, again := admitPod(t, srv, first)
	if again.Labels[v1alpha1.JobIDLabel] != "41" || next != 41 || !jobstate.GroupOfOne(again) {
		t.Errorf("reinvocation: job id %q, ids taken %d; want 41 kept and no other taken", again.Labels[v1alpha1.JobIDLabel], next-40)
	}
	other := namedPod("copycat", maps.Clone(first.Labels), nil)
	other.Annotations = maps.Clone(first.Annotations)
	_, copied := admitPod(t, srv, other)
	if copied.Labels[v1alpha1.JobIDLabel] != "42" || copied.Annotations[v1alpha1.PodGroupAnnotation] != "copycat-job42" {
		t.Errorf("another pod with eval's id: job id %q group %q; want 42 and its own group",
			copied.Labels[v1alpha1.JobIDLabel], copied.Annotations[v1alpha1.PodGroupAnnotation])
	}
}

// A pod Sluice itself creates (a Slurm job's, already bound, numbered and assigned its
// GPUs by the scheduler) keeps what Sluice wrote; the same pod from anyone else does not.
func TestAdmitKeepsWhatSluiceWrote(t *testing.T) {
	pod := namedPod("job-7-0", map[string]string{v1alpha1.JobIDLabel: "7", "sluice.dev/slurm-job": "true"},
		[]metav1.OwnerReference{{APIVersion: "scheduling.sluice.dev/v1alpha1", Kind: "PodGroup", Name: "job-7", UID: "1234"}})
	pod.Annotations = map[string]string{v1alpha1.PodGroupAnnotation: "job-7", v1alpha1.GPUAssignmentAnnotation: `[{"index":0}]`}
	for _, tt := range []struct {
		user string
		kept bool
	}{{"system:serviceaccount:sluice-system:sluice-server", true}, {"mallory", false}} {
		t.Run(tt.user, func(t *testing.T) {
			a := testAdmitter(t, nil)
			a.self = []string{"system:serviceaccount:sluice-system:sluice-server"}
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(reviewFor(t, pod, admissionv1.Create), &review); err != nil {
				t.Fatal(err)
			}
			review.Request.UserInfo.Username = tt.user
			_, got := admitRequest(t, serveAdmitter(t, a), pod, mustJSON(t, review))
			kept := got.Labels[v1alpha1.JobIDLabel] == "7" && got.Annotations[v1alpha1.GPUAssignmentAnnotation] != ""
			if kept != tt.kept {
				t.Errorf("job id %q, GPU assignment %q: kept %v, want %v", got.Labels[v1alpha1.JobIDLabel], got.Annotations[v1alpha1.GPUAssignmentAnnotation], kept, tt.kept)
			}
		})
	}
}
