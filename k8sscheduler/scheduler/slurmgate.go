package scheduler

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Reasons a pending Slurm job is kept out of placement, as Slurm's squeue names them.
const (
	// ReasonJobHeld: spec.slurm.hold is set (sbatch -H, scontrol hold).
	ReasonJobHeld = "JobHeldUser"
	// ReasonDependency: the job has a --dependency that is not (yet) satisfied.
	ReasonDependency = "Dependency"
)

// slurmGate reports why a Slurm job that has not started may not be placed yet: held, or a
// dependency whose Eligible condition is not True for the group's current generation (a
// release or an edit is judged again by the lifecycle before the job may run). ok is true
// when nothing holds it back.
func slurmGate(pg *v1alpha1.PodGroup) (code, message string, ok bool) {
	s := pg.Spec.Slurm
	if s == nil {
		return "", "", true
	}
	if s.Hold {
		return ReasonJobHeld, "the job is held; release it with scontrol release", false
	}
	if s.Dependency == "" {
		return "", "", true
	}
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionEligible)
	switch {
	case c == nil || c.ObservedGeneration != pg.Generation:
		return ReasonDependency, "waiting for the dependency " + s.Dependency + " to be judged", false
	case c.Status != metav1.ConditionTrue:
		code := c.Reason // Dependency or DependencyNeverSatisfied, as Slurm says
		if code == "" {
			code = ReasonDependency
		}
		return code, c.Message, false
	}
	return "", "", true
}

// eligibility is the part of the Eligible condition the gate reads, to notice a change
// that arrives as a status-only update.
func eligibility(pg *v1alpha1.PodGroup) metav1.Condition {
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionEligible)
	if c == nil {
		return metav1.Condition{}
	}
	return metav1.Condition{Status: c.Status, Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration}
}

// clearRequeued makes a Slurm group whose pods were created placeable again once it was
// requeued: Pending with a higher requeue count than the run it created, and none of that
// run's pods left (terminating ones still hold their GPUs) nor in flight. The requeue
// count, not the phase alone, tells a new run from our own Running write not yet seen.
func (g *groupEntry) clearRequeued() {
	pg := g.pg
	if !g.created || pg == nil || pg.Status.Requeues <= g.createdRun || g.pods.len() > 0 || len(g.assumed) > 0 {
		return
	}
	if pg.Status.Phase != "" && pg.Status.Phase != v1alpha1.PodGroupPending {
		return
	}
	g.created = false
	g.ranWhole, g.staleSince = false, time.Time{}
	g.status.written = statusKey{} // compare the next run's status with what is stored
}
