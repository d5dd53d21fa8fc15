package jobstate

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// PendingReason is Slurm's reason a pending job waits, from its PodGroup: held
// (JobHeldUser), before its --begin time (BeginTime), not eligible by its dependency (the
// lifecycle's Eligible condition), else what the scheduler's Scheduled condition says;
// "None" when nothing says why.
func PendingReason(pg *v1alpha1.PodGroup, now time.Time) string {
	if pg.Spec.Slurm != nil && pg.Spec.Slurm.Hold {
		return "JobHeldUser"
	}
	if begin, err := v1alpha1.ParseBeginTime(pg.Annotations[v1alpha1.BeginTimeAnnotation]); err == nil && now.Before(begin) {
		return "BeginTime"
	}
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionEligible); c != nil && c.Status == metav1.ConditionFalse {
		return c.Reason
	}
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionScheduled); c != nil && c.Status == metav1.ConditionFalse && c.Reason != "" {
		if r, ok := EligibilityReason(c.Reason, c.Message); ok {
			return r
		}
		if r, ok := spelledReasons[c.Reason]; ok {
			return r
		}
		return c.Reason
	}
	return "None"
}

// spelledReasons are Slurm's pending reasons that are no valid condition reason (spaces),
// by the condition reason the scheduler writes for them (the words run together, each
// capitalised), so every view shows Slurm's text.
var spelledReasons = map[string]string{
	"ReqNodeNotAvail,ReservedForMaintenance": "ReqNodeNotAvail, Reserved for maintenance",
}

// EligibilityReason reads Slurm's pending reason back from a Scheduled condition that
// carries the pod factory's refusal of a job not yet eligible (reason PodCreateFailed,
// message "Dependency: ..."), so a view shows Dependency rather than a failure to create
// pods.
func EligibilityReason(reason, message string) (string, bool) {
	if reason != v1alpha1.ReasonPodCreateFailed {
		return "", false
	}
	r, _, _ := strings.Cut(message, ": ")
	switch r {
	case "JobHeldUser", "BeginTime", "Dependency", "DependencyNeverSatisfied":
		return r, true
	}
	return "", false
}
