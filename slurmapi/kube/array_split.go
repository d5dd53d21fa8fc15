package kube

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// WithJobIDs gives the lifecycle the job id counter array tasks take their
// ids from when they are split off: the backend's (Backend.JobIDs), so
// they never collide with a submission's. Without it an array splits
// nothing.
func (l *Lifecycle) WithJobIDs(ids *JobIDs) *Lifecycle {
	l.ids = ids
	return l
}

// plannedTask is a task of a split under way: its index and the id it was given.
type plannedTask struct {
	index int
	id    uint32
}

// formatPlan writes a split's tasks as ArraySplitAnnotation holds them.
func formatPlan(plan []plannedTask) string {
	parts := make([]string, len(plan))
	for i, t := range plan {
		parts[i] = strconv.Itoa(t.index) + "=" + v1alpha1.FormatJobID(t.id)
	}
	return strings.Join(parts, ",")
}

// splitPlan reads the record's split under way, if any.
func splitPlan(pg *v1alpha1.PodGroup) ([]plannedTask, error) {
	text := pg.Annotations[ArraySplitAnnotation]
	if text == "" {
		return nil, nil
	}
	var plan []plannedTask
	for _, part := range strings.Split(text, ",") {
		index, id, ok := strings.Cut(part, "=")
		i, err1 := strconv.Atoi(index)
		n, err2 := v1alpha1.ParseJobID(id)
		if !ok || err1 != nil || err2 != nil || i < 0 || n == 0 {
			return nil, fmt.Errorf("PodGroup %s/%s: %s %q is not index=id,...", pg.Namespace, pg.Name, ArraySplitAnnotation, text)
		}
		plan = append(plan, plannedTask{index: i, id: n})
	}
	return plan, nil
}

// splitReady splits off the tasks of record pg that may start now, in two
// writes of the record, each guarded by the version read, so a concurrent
// scancel or hold wins: first the split's indices leave the pending list
// and the ids just taken for them are written beside it (the plan), then,
// once the tasks exist, the plan is dropped. A split found planned (a
// crash, a conflict in between) is finished with the plan's ids, whatever
// happened since, so an index is never given two ids or two tasks.
func (l *Lifecycle) splitReady(ctx context.Context, pg *v1alpha1.PodGroup) error {
	plan, err := splitPlan(pg)
	if err != nil {
		return err
	}
	switch {
	case jobstate.PhaseFinal(pg.Status.Phase):
		if len(plan) > 0 {
			return l.endPlannedTasks(ctx, pg, plan)
		}
		return nil
	case len(plan) > 0:
		return l.finishSplit(ctx, pg, plan, false) // split before any hold: the tasks are due
	case pg.Spec.Slurm.Hold:
		return nil
	}
	if pg.Spec.Slurm.Dependency != "" {
		if err := l.markEligibility(ctx, pg); err != nil {
			return err
		}
		if err := Eligible(ctx, l.deps, pg); err != nil {
			return nil // judged again when a job it depends on ends
		}
	}
	pending, err := pendingIndices(pg)
	if err != nil {
		return err
	}
	tasks, err := arrayTasks(ctx, l.cache, pg)
	if err != nil {
		return err
	}
	n := min(splitBudget(pg, tasks), len(pending))
	if n <= 0 {
		return nil
	}
	last := n == len(pending)
	if last {
		n-- // the last index becomes the record itself, under the array job id
	}
	next := pg.DeepCopy()
	if n > 0 {
		if l.ids == nil {
			return fmt.Errorf("split array %s: the lifecycle has no job id counter", pg.Labels[ArrayJobLabel])
		}
		first, err := l.ids.NextSlurm(ctx, uint32(n))
		if err != nil {
			return fmt.Errorf("split %d tasks off array %s: %w", n, pg.Labels[ArrayJobLabel], err)
		}
		for k, index := range pending[:n] {
			plan = append(plan, plannedTask{index: index, id: first + uint32(k)})
		}
		next.Annotations[ArrayPendingAnnotation] = sbatch.FormatIndices(pending[n:])
		next.Annotations[ArraySplitAnnotation] = formatPlan(plan)
		// On a conflict the ids just taken stay unused: a gap, as Slurm's ids may have.
		if err := l.client.Update(ctx, next); err != nil {
			return fmt.Errorf("plan the split of array %s: %w", pg.Labels[ArrayJobLabel], err)
		}
	}
	return l.finishSplit(ctx, next, plan, last)
}

// finishSplit creates the planned tasks of record pg (already there: a
// retried split) and drops the plan; with last, the one index left pending
// turns the record itself into its task, in the same write.
func (l *Lifecycle) finishSplit(ctx context.Context, pg *v1alpha1.PodGroup, plan []plannedTask, last bool) error {
	for _, t := range plan {
		if err := l.client.Create(ctx, newTask(pg, t.index, t.id)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("split task %d off array %s: %w", t.index, pg.Labels[ArrayJobLabel], err)
		}
	}
	next := pg.DeepCopy()
	delete(next.Annotations, ArraySplitAnnotation)
	if last {
		pending, err := pendingIndices(pg)
		if err != nil {
			return err
		}
		id, err := recordJobID(pg)
		if err != nil {
			return err
		}
		if len(pending) == 1 {
			asTask(next, pending[0], id)
		}
	}
	if err := l.client.Update(ctx, next); err != nil {
		return fmt.Errorf("record the split of array %s: %w", pg.Labels[ArrayJobLabel], err)
	}
	return nil
}

// endPlannedTasks ends, as the record ended, the tasks of a split that was
// under way when the array was cancelled: created after scancel listed the
// array's tasks, they would otherwise run on. Then the plan is dropped.
func (l *Lifecycle) endPlannedTasks(ctx context.Context, pg *v1alpha1.PodGroup, plan []plannedTask) error {
	for _, t := range plan {
		var task v1alpha1.PodGroup
		err := l.client.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: PodGroupName(t.id)}, &task)
		if apierrors.IsNotFound(err) {
			continue // never created: nothing runs
		}
		if err != nil {
			return err
		}
		if jobstate.PhaseFinal(task.Status.Phase) {
			continue
		}
		err = jobstate.WriteStatus(ctx, l.client.Status(), &task, func(st *v1alpha1.PodGroupStatus) {
			jobstate.MarkEnded(st, pg.Status.Phase, time.Now())
		})
		if err != nil {
			return fmt.Errorf("end task %d of ended array %s: %w", t.index, pg.Labels[ArrayJobLabel], err)
		}
		err = l.client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(task.Namespace),
			client.MatchingLabels{v1alpha1.JobIDLabel: task.Labels[v1alpha1.JobIDLabel], SlurmPodLabel: "true"})
		if err != nil {
			return fmt.Errorf("delete pods of job %s: %w", task.Labels[v1alpha1.JobIDLabel], err)
		}
	}
	next := pg.DeepCopy()
	delete(next.Annotations, ArraySplitAnnotation)
	if err := l.client.Update(ctx, next); err != nil {
		return fmt.Errorf("drop the split plan of ended array %s: %w", pg.Labels[ArrayJobLabel], err)
	}
	return nil
}

// splitUnderWay refuses, as a conflict (retried by retry.RetryOnConflict,
// else a 409 asking to try again), a scancel of task index of record pg
// while a split is under way, for the few milliseconds between its two
// writes: an index being split has no PodGroup to cancel yet, and ending
// the record for its last pending index would end the tasks being split
// with it (endPlannedTasks).
func splitUnderWay(pg *v1alpha1.PodGroup, index int, pending []int) error {
	plan, err := splitPlan(pg)
	if err != nil || len(plan) == 0 {
		return err
	}
	planned := slices.ContainsFunc(plan, func(t plannedTask) bool { return t.index == index })
	if planned || (len(pending) == 1 && pending[0] == index) {
		return apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "podgroups"}, pg.Name,
			fmt.Errorf("array %s is splitting task %d off", pg.Labels[ArrayJobLabel], index))
	}
	return nil
}
