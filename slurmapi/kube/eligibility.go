package kube

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// ConditionEligible is the PodGroup condition through which the lifecycle
// controller tells the scheduler whether a Slurm job with a --dependency
// may start: True once the dependency is met, False with Slurm's reason
// (Dependency, DependencyNeverSatisfied) while it is not. The scheduler
// is asked (issue 5 report) to place a Slurm job only when it is not held
// and, if it has a dependency, this condition is True for its generation.
const ConditionEligible = v1alpha1.PodGroupConditionEligible

// eligibleCondition is the Eligible condition a pending job should carry,
// nil for jobs without a dependency (nothing to wait for beyond hold,
// which the scheduler reads from spec.slurm.hold).
func eligibleCondition(ctx context.Context, r client.Reader, pg *v1alpha1.PodGroup) (*metav1.Condition, error) {
	s := pg.Spec.Slurm
	if s == nil || s.Dependency == "" {
		return nil, nil
	}
	deps := *pg
	deps.Spec.Slurm = s.DeepCopy()
	deps.Spec.Slurm.Hold = false // held or not, the dependency is judged on its own
	c := &metav1.Condition{Type: ConditionEligible, Status: metav1.ConditionTrue, Reason: "DependencySatisfied",
		Message: "the job's dependency " + s.Dependency + " is satisfied", ObservedGeneration: pg.Generation}
	err := Eligible(ctx, r, &deps)
	var ne *NotEligible
	switch {
	case errors.As(err, &ne):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ne.Reason, ne.Message
	case err != nil:
		return nil, err
	}
	return c, nil
}

// markEligibility writes the pending job's Eligible condition when it
// changed; only the lifecycle controller writes this condition.
func (l *Lifecycle) markEligibility(ctx context.Context, pg *v1alpha1.PodGroup) error {
	want, err := eligibleCondition(ctx, l.deps, pg)
	if err != nil || want == nil {
		return err
	}
	have := meta.FindStatusCondition(pg.Status.Conditions, ConditionEligible)
	if have != nil && have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message && have.ObservedGeneration == want.ObservedGeneration {
		return nil
	}
	err = jobstate.WriteStatus(ctx, l.client.Status(), pg, func(st *v1alpha1.PodGroupStatus) { meta.SetStatusCondition(&st.Conditions, *want) })
	if err != nil {
		return fmt.Errorf("write eligibility of job %s: %w", pg.Labels[v1alpha1.JobIDLabel], err)
	}
	return nil
}

// wakeDependents queues the pending jobs that wait on a dependency when a
// job ends, so their Eligible condition follows at once.
func (l *Lifecycle) wakeDependents(ctx context.Context) {
	var list v1alpha1.PodGroupList
	if err := l.cache.List(ctx, &list, client.HasLabels{v1alpha1.JobIDLabel}); err != nil {
		klog.FromContext(ctx).Info("slurm lifecycle: dependents of an ended job wait for their next change", "err", err)
		return
	}
	for i := range list.Items {
		pg := &list.Items[i]
		if s := pg.Spec.Slurm; s != nil && s.Dependency != "" && !jobstate.PhaseFinal(pg.Status.Phase) {
			l.queue.Add(client.ObjectKeyFromObject(pg))
		}
	}
}
