package jobstate

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// The status patch sends only what a writer changed, guarded by the version it read, so
// it can neither drop another writer's field nor overwrite a change it did not see.
func TestStatusPatch(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
	pg := &v1alpha1.PodGroup{}
	pg.ResourceVersion = "42"
	pg.Status = v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupRunning, StartTime: &started, Running: 2, State: "RUNNING",
		Conditions: []metav1.Condition{{Type: "Eligible", Status: metav1.ConditionTrue, Reason: "DependencySatisfied"}}}
	at := time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		change func(*v1alpha1.PodGroupStatus)
		want   string // the patch's status, "" for no write
	}{
		{"nothing changed", func(*v1alpha1.PodGroupStatus) {}, ""},
		{"same values written again", func(st *v1alpha1.PodGroupStatus) { st.Phase, st.Running = v1alpha1.PodGroupRunning, 2 }, ""},
		{"ended: phase, end, no pods running; start, state and conditions untouched",
			func(st *v1alpha1.PodGroupStatus) { MarkEnded(st, v1alpha1.PodGroupCancelled, at) },
			`{"endTime":"2026-12-06T11:00:00Z","phase":"Cancelled","running":null}`},
		{"requeued: the run's fields cleared, one more requeue",
			func(st *v1alpha1.PodGroupStatus) { MarkRequeued(st, at) },
			`{"lastRequeueTime":"2026-12-06T11:00:00Z","phase":"Pending","requeues":1,"running":null,"startTime":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := pg.DeepCopy()
			tc.change(&next.Status)
			body, err := statusPatch(pg, &next.Status)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if body != nil {
					t.Fatalf("patch %s, want no write", body)
				}
				return
			}
			var got struct {
				Metadata struct {
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
				Status json.RawMessage `json:"status"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("patch %s: %v", body, err)
			}
			if got.Metadata.ResourceVersion != "42" {
				t.Errorf("precondition resourceVersion %q, want 42", got.Metadata.ResourceVersion)
			}
			if string(got.Status) != tc.want {
				t.Errorf("status patch\n got %s\nwant %s", got.Status, tc.want)
			}
		})
	}
}

func TestPhaseFinal(t *testing.T) {
	for p, want := range map[v1alpha1.PodGroupPhase]bool{
		"": false, v1alpha1.PodGroupPending: false, v1alpha1.PodGroupRunning: false,
		v1alpha1.PodGroupSucceeded: true, v1alpha1.PodGroupFailed: true, v1alpha1.PodGroupCancelled: true,
		v1alpha1.PodGroupTimedOut: true, v1alpha1.PodGroupPreempted: true,
	} {
		if got := PhaseFinal(p); got != want {
			t.Errorf("PhaseFinal(%q) = %v, want %v", p, got, want)
		}
	}
}
