package podgrouper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// usedUp stands for slurmapi/kube.IDsUsedUpError, which this package
// recognises by its method alone.
type usedUp struct{}

func (usedUp) Error() string      { return "every job id up to 2147483647 is taken" }
func (usedUp) JobIDsUsedUp() bool { return true }

// TestNoJobIDIsAnEventOnThePod: a group that cannot be numbered because
// the ids are used up leaves a Warning Event on the pod saying so; other
// failures (the API server away) do not.
func TestNoJobIDIsAnEventOnThePod(t *testing.T) {
	wrapped := fmt.Errorf("a job id for PodGroup ns/g: %w", usedUp{})
	if !jobIDsUsedUp(wrapped) || jobIDsUsedUp(errors.New("connection refused")) {
		t.Fatal("jobIDsUsedUp does not tell used-up ids from another failure")
	}
	kube := fake.NewClientset()
	g := &Controller{kube: kube}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train-0", UID: "u1"}}
	g.warnNoJobID(context.Background(), pod, wrapped)
	events, err := kube.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 {
		t.Fatalf("%d events, want 1", len(events.Items))
	}
	ev := events.Items[0]
	if ev.Type != corev1.EventTypeWarning || ev.Reason != "JobIDsUsedUp" || ev.InvolvedObject.Name != "train-0" ||
		!strings.Contains(ev.Message, "2147483647") {
		t.Errorf("event %+v", ev)
	}
}
