package kube

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// NotEligible says why a Slurm job may not start yet, with Slurm's pending
// reason (JobHeldUser, Dependency, DependencyNeverSatisfied).
type NotEligible struct {
	Reason  string
	Message string
}

func (e *NotEligible) Error() string { return e.Reason + ": " + e.Message }

// Eligible reports whether the Slurm job pg may start: not held, its
// --begin time reached, and its --dependency satisfied. It reads the jobs the
// dependency names (their groups and pods) from r.
func Eligible(ctx context.Context, r client.Reader, pg *v1alpha1.PodGroup) error {
	s := pg.Spec.Slurm
	if s == nil {
		return nil
	}
	if s.Hold {
		return &NotEligible{Reason: "JobHeldUser", Message: "the job is held; release it with scontrol release"}
	}
	if begin := beginTime(pg); time.Now().Before(begin) {
		return &NotEligible{Reason: "BeginTime", Message: "the job may not start before " + begin.Format(time.RFC3339)}
	}
	if s.Dependency == "" {
		return nil
	}
	deps, err := sbatch.ParseDependency(s.Dependency)
	if err != nil {
		return &NotEligible{Reason: "DependencyNeverSatisfied", Message: err.Error()}
	}
	var firstWait error
	for _, dep := range deps.List {
		err := conditionMet(ctx, r, pg, dep)
		switch {
		case err == nil && deps.Any:
			return nil
		case err != nil && !deps.Any:
			return err
		case err != nil && firstWait == nil:
			firstWait = err
		}
	}
	return firstWait
}

// conditionMet checks one condition of a dependency against every job it names, in the
// state the job model gives it (a Slurm job, a manifest workload, a bare pod alike).
func conditionMet(ctx context.Context, r client.Reader, pg *v1alpha1.PodGroup, dep sbatch.Dependency) error {
	if dep.Type == "singleton" {
		return singletonMet(ctx, r, pg)
	}
	for _, id := range dep.Jobs {
		job, found, err := jobstate.Find(ctx, r, uint32(id))
		if err != nil {
			return fmt.Errorf("read dependency job %d: %w", id, err)
		}
		if !found {
			return &NotEligible{Reason: "DependencyNeverSatisfied", Message: fmt.Sprintf("job %d does not exist", id)}
		}
		if err := dependencyMet(dep.Type, uint64(id), job.View(time.Now())); err != nil {
			return err
		}
	}
	return nil
}

// dependencyMet applies one dependency type to the view of the job it names, as Slurm
// does: after waits for the job to start (or end without starting), the others for it
// to have ended and no longer be completing; afterok needs COMPLETED, afternotok any
// other end (FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, CANCELLED, PREEMPTED).
func dependencyMet(kind string, id uint64, v jobstate.View) error {
	done := v.State.Final() && !v.Completing
	wait := &NotEligible{Reason: "Dependency", Message: fmt.Sprintf("waiting for job %d (%s) to satisfy %s", id, stateText(v), kind)}
	never := &NotEligible{Reason: "DependencyNeverSatisfied", Message: fmt.Sprintf("job %d ended %s, so %s can never be satisfied", id, v.State, kind)}
	switch kind {
	case "after":
		if v.State == jobstate.Pending {
			return wait
		}
	case "afterany":
		if !done {
			return wait
		}
	case "afterok":
		if !done {
			return wait
		}
		if v.State != jobstate.Completed {
			return never
		}
	case "afternotok":
		if !done {
			return wait
		}
		if v.State == jobstate.Completed {
			return never
		}
	default:
		return &NotEligible{Reason: "DependencyNeverSatisfied", Message: fmt.Sprintf("dependency type %q is not supported", kind)}
	}
	return nil
}

// stateText is the state squeue shows, COMPLETING for a job that ended and still holds
// a node.
func stateText(v jobstate.View) string {
	if v.Completing {
		return string(jobstate.Completing)
	}
	return string(v.State)
}

// singletonMet holds a job while an earlier job of the same name and user
// has not ended, as Slurm's --dependency=singleton.
func singletonMet(ctx context.Context, r client.Reader, pg *v1alpha1.PodGroup) error {
	var list v1alpha1.PodGroupList
	if err := r.List(ctx, &list, client.HasLabels{v1alpha1.JobIDLabel}); err != nil {
		return fmt.Errorf("read jobs for singleton: %w", err)
	}
	self := v1alpha1.JobIDOf(pg.Labels)
	for i := range list.Items {
		o := &list.Items[i]
		os := o.Spec.Slurm
		if os == nil || os.Name != pg.Spec.Slurm.Name || os.User != pg.Spec.Slurm.User || jobstate.PhaseFinal(o.Status.Phase) {
			continue
		}
		if id := v1alpha1.JobIDOf(o.Labels); id != 0 && id < self {
			return &NotEligible{Reason: "Dependency", Message: fmt.Sprintf("singleton: job %d of the same name and user has not ended", id)}
		}
	}
	return nil
}
