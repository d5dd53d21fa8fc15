package health

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMergeConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(2000, 0))
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: t0}
	tests := []struct {
		name           string
		existing       []corev1.NodeCondition
		desired        corev1.NodeCondition
		wantTransition metav1.Time
		wantChanged    bool
	}{
		{"new condition is added", []corev1.NodeCondition{ready},
			corev1.NodeCondition{Type: "GPULost", Status: corev1.ConditionFalse, LastTransitionTime: t1}, t1, true},
		{"same status keeps the transition time", []corev1.NodeCondition{ready,
			{Type: "GPULost", Status: corev1.ConditionTrue, Reason: "NodeRebootRequired", LastTransitionTime: t0}},
			corev1.NodeCondition{Type: "GPULost", Status: corev1.ConditionTrue, Reason: "NodeRebootRequired", LastTransitionTime: t1}, t0, false},
		{"status flip takes the new time", []corev1.NodeCondition{ready,
			{Type: "GPULost", Status: corev1.ConditionTrue, LastTransitionTime: t0}},
			corev1.NodeCondition{Type: "GPULost", Status: corev1.ConditionFalse, LastTransitionTime: t1}, t1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := []corev1.NodeCondition{tt.desired}
			if got := ConditionsChanged(tt.existing, desired); got != tt.wantChanged {
				t.Errorf("ConditionsChanged = %v, want %v", got, tt.wantChanged)
			}
			merged := MergeConditions(tt.existing, desired)
			if merged[0].Type != corev1.NodeReady {
				t.Errorf("other conditions must stay in place: %+v", merged)
			}
			i := conditionIndex(merged, tt.desired.Type)
			if i < 0 || !merged[i].LastTransitionTime.Equal(&tt.wantTransition) || merged[i].Status != tt.desired.Status {
				t.Errorf("merged %+v, want status %s transition %v", merged, tt.desired.Status, tt.wantTransition)
			}
		})
	}
}
