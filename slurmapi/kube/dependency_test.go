package kube

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

func TestDependencyMet(t *testing.T) {
	tests := []struct {
		kind       string
		state      jobstate.State
		completing bool
		reason     string // "" when met
	}{
		{"afterok", jobstate.Running, false, "Dependency"},
		{"afterok", jobstate.Completed, false, ""},
		{"afterok", jobstate.Completed, true, "Dependency"}, // Slurm waits while it completes
		{"afterok", jobstate.Failed, false, "DependencyNeverSatisfied"},
		{"afterok", jobstate.OutOfMemory, false, "DependencyNeverSatisfied"},
		{"afternotok", jobstate.Failed, false, ""},
		{"afternotok", jobstate.Timeout, false, ""},
		{"afternotok", jobstate.NodeFail, false, ""},
		{"afternotok", jobstate.Cancelled, true, "Dependency"},
		{"afternotok", jobstate.Completed, false, "DependencyNeverSatisfied"},
		{"afterany", jobstate.Cancelled, false, ""},
		{"afterany", jobstate.Preempted, false, ""},
		{"afterany", jobstate.Pending, false, "Dependency"},
		{"after", jobstate.Pending, false, "Dependency"},
		{"after", jobstate.Running, false, ""},
		{"after", jobstate.Cancelled, false, ""},
		{"aftercorr", jobstate.Completed, false, "DependencyNeverSatisfied"},
	}
	for _, tc := range tests {
		err := dependencyMet(tc.kind, 3, jobstate.View{State: tc.state, Completing: tc.completing})
		got := ""
		if ne, ok := err.(*NotEligible); ok {
			got = ne.Reason
		}
		if got != tc.reason {
			t.Errorf("%s on a %s job (completing %v): %v, want reason %q", tc.kind, tc.state, tc.completing, err, tc.reason)
		}
	}
}

// TestPendingReasonOfRefusedJob: while the factory refuses a job's pods,
// squeue shows Slurm's reason, not the scheduler's PodCreateFailed.
func TestPendingReasonOfRefusedJob(t *testing.T) {
	tests := []struct{ reason, message, want string }{
		{v1alpha1.ReasonPodCreateFailed, (&NotEligible{Reason: "Dependency", Message: "waiting for job 3"}).Error(), "Dependency"},
		{v1alpha1.ReasonPodCreateFailed, (&NotEligible{Reason: "DependencyNeverSatisfied", Message: "job 3 ended Failed"}).Error(), "DependencyNeverSatisfied"},
		{v1alpha1.ReasonPodCreateFailed, "pods \"job-4-0\" is forbidden: quota", v1alpha1.ReasonPodCreateFailed},
		{"Unschedulable", "Dependency: not ours", "Unschedulable"},
	}
	for _, tc := range tests {
		pg := PodGroupFor(&slurmapi.JobDesc{Account: "nlp", Nodes: 1, Tasks: 1, CPUsPerTask: 1}, 4)
		pg.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupConditionScheduled, Status: metav1.ConditionFalse, Reason: tc.reason, Message: tc.message}}
		j, err := JobFromPodGroup(pg)
		if err != nil {
			t.Fatal(err)
		}
		if j.Reason != tc.want || j.State[0] != "PENDING" {
			t.Errorf("%s %q: state %v reason %q, want PENDING %q", tc.reason, tc.message, j.State, j.Reason, tc.want)
		}
	}
}
