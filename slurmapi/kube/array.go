package kube

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Job arrays, the Slurm way: a pending array is one object. sbatch --array
// creates one PodGroup, the array's record, with the array job id and no
// members, so the scheduler has nothing to place (deferred.go); the indices
// still to run are kept in an annotation. The
// lifecycle controller splits tasks off that record as they may start:
// each becomes its own PodGroup (its own job id, array_job_id and
// array_task_id), which the scheduler places like any job, and the last
// index turns the record itself into its task, as Slurm reuses the array
// job's record for the last task. Tasks are split while fewer than
// arraySplitAhead split tasks wait to start and, with %max, while fewer
// than max tasks are running or waiting: so %max caps what runs at once
// and a pending array costs at most a few objects beyond its record.
//
// Ids are given as Slurm gives them: the submission takes one, the array
// job id A, which the record keeps and the last task inherits; a task gets
// its own id when it is split off (array_split.go), so an array costs the
// ids of the tasks that were split, not of the indices it names, and an
// array cancelled while pending costs one.
const (
	// ArrayJobLabel carries the array job id on the record and every task.
	ArrayJobLabel = "sluice.dev/array-job-id"
	// ArrayTaskLabel carries the task index on a split task.
	ArrayTaskLabel = "sluice.dev/array-task-id"
	// ArrayPendingAnnotation lists, on the record, the indices not split
	// off yet, as Slurm shows them ("4-15").
	ArrayPendingAnnotation = "sluice.dev/array-pending"
	// ArraySplitAnnotation lists, on the record, the tasks of a split under
	// way and the ids they were given ("4=1207,5=1208"): written before the
	// tasks are created and dropped once they are, so a split retried after
	// a crash creates the same tasks under the same ids.
	ArraySplitAnnotation = "sluice.dev/array-split"
	// arraySplitAhead is how many split tasks may wait to start at once.
	arraySplitAhead = 4
)

// formatArrayTask writes an ArrayTaskLabel value: the task's index, in decimal. (The
// ArrayJobLabel's value is a job id: v1alpha1.FormatJobID.)
func formatArrayTask(index int) string { return strconv.Itoa(index) }

// arrayRecord reports whether pg is an array's record with tasks not
// split off yet.
func arrayRecord(pg *v1alpha1.PodGroup) bool {
	return pg.Spec.Slurm != nil && pg.Spec.Slurm.ArrayTaskID == nil && pg.Annotations[ArrayPendingAnnotation] != ""
}

// asArrayRecord turns a job's PodGroup into the record of array a.
func asArrayRecord(pg *v1alpha1.PodGroup, a sbatch.Array) {
	deferMembers(pg)
	pg.Annotations[ArrayPendingAnnotation] = sbatch.FormatIndices(a.Indices())
	pg.Labels[ArrayJobLabel] = pg.Labels[v1alpha1.JobIDLabel]
}

// pendingIndices reads the record's indices not split off yet.
func pendingIndices(pg *v1alpha1.PodGroup) ([]int, error) {
	a, err := sbatch.ParseArray(pg.Annotations[ArrayPendingAnnotation])
	if err != nil {
		return nil, fmt.Errorf("PodGroup %s/%s: %s: %w", pg.Namespace, pg.Name, ArrayPendingAnnotation, err)
	}
	return a.Indices(), nil
}

// recordJobID is the array job id of the array whose record (or task) is
// pg: the id the last task inherits.
func recordJobID(pg *v1alpha1.PodGroup) (uint32, error) {
	id, err := v1alpha1.ParseJobID(pg.Labels[ArrayJobLabel])
	if err != nil {
		return 0, fmt.Errorf("PodGroup %s/%s has no valid %s label", pg.Namespace, pg.Name, ArrayJobLabel)
	}
	return id, nil
}

// asTask makes pg (a copy of the record) the task with index and id.
func asTask(pg *v1alpha1.PodGroup, index int, id uint32) {
	id32, _ := v1alpha1.ParseJobID(pg.Labels[ArrayJobLabel])
	arrayID, task := int64(id32), int32(index)
	restoreMembers(pg)
	s := pg.Spec.Slurm
	s.ArrayJobID, s.ArrayTaskID = &arrayID, &task
	s.Dependency = "" // the record's dependency was met before any split
	delete(pg.Annotations, ArrayPendingAnnotation)
	delete(pg.Annotations, ArraySplitAnnotation)
	pg.Labels[v1alpha1.JobIDLabel] = v1alpha1.FormatJobID(id)
	pg.Labels[ArrayTaskLabel] = formatArrayTask(index)
}

// newTask is the PodGroup of a task split off the record.
func newTask(record *v1alpha1.PodGroup, index int, id uint32) *v1alpha1.PodGroup {
	t := &v1alpha1.PodGroup{TypeMeta: record.TypeMeta, Spec: *record.Spec.DeepCopy()}
	t.Name, t.Namespace = PodGroupName(id), record.Namespace
	t.Labels = make(map[string]string, len(record.Labels)+1)
	for k, v := range record.Labels {
		t.Labels[k] = v
	}
	t.Annotations = make(map[string]string, len(record.Annotations))
	for k, v := range record.Annotations {
		t.Annotations[k] = v
	}
	asTask(t, index, id)
	return t
}

// arrayTasks lists the split tasks of the array whose record is pg.
func arrayTasks(ctx context.Context, r client.Reader, pg *v1alpha1.PodGroup) ([]v1alpha1.PodGroup, error) {
	var list v1alpha1.PodGroupList
	if err := r.List(ctx, &list, client.InNamespace(pg.Namespace), client.MatchingLabels{ArrayJobLabel: pg.Labels[ArrayJobLabel]}); err != nil {
		return nil, fmt.Errorf("list tasks of array %s: %w", pg.Labels[ArrayJobLabel], err)
	}
	tasks := list.Items[:0]
	for _, t := range list.Items {
		if t.Name != pg.Name {
			tasks = append(tasks, t)
		}
	}
	return tasks, nil
}

// splitBudget is how many tasks may be split off now: the room under
// arraySplitAhead waiting tasks and under the %max limit.
func splitBudget(pg *v1alpha1.PodGroup, tasks []v1alpha1.PodGroup) int {
	live, waiting := 0, 0
	for i := range tasks {
		switch p := tasks[i].Status.Phase; {
		case p == "" || p == v1alpha1.PodGroupPending:
			live++
			waiting++
		case !jobstate.PhaseFinal(p):
			live++
		}
	}
	budget := arraySplitAhead - waiting
	if a, err := sbatch.ParseArray(pg.Spec.Slurm.Array); err == nil && a.MaxRunning > 0 {
		budget = min(budget, a.MaxRunning-live)
	}
	return budget
}

// splitArray splits off the tasks of the array record pg that may start
// now. A held record, one whose dependency is not met or whose begin time
// is still ahead, and a cancelled one split nothing.
func (l *Lifecycle) splitArray(ctx context.Context, pg *v1alpha1.PodGroup) (time.Duration, error) {
	if wait := time.Until(beginTime(pg)); wait > 0 {
		return wait, nil // --begin: looked at again then
	}
	return 0, l.splitReady(ctx, pg)
}

// arrayRecordOf is the key of the record of the array task pg belongs to,
// so a task's start or end lets the record split more.
func arrayRecordOf(pg *v1alpha1.PodGroup) (client.ObjectKey, bool) {
	arrayID, err := v1alpha1.ParseJobID(pg.Labels[ArrayJobLabel])
	if err != nil || pg.Labels[ArrayJobLabel] == pg.Labels[v1alpha1.JobIDLabel] {
		return client.ObjectKey{}, false
	}
	return client.ObjectKey{Namespace: pg.Namespace, Name: PodGroupName(arrayID)}, true
}

// markArrayTaskLimits gives an array record that waits only because %max
// tasks already run Slurm's reason, JobArrayTaskLimit. jobs holds the
// record's tasks when they were listed with it.
func markArrayTaskLimits(jobs []slurmapi.Job) {
	live := map[uint32]int{}
	for i := range jobs {
		if j := &jobs[i]; j.ArrayTaskID != nil && (j.State[0] == "PENDING" || j.State[0] == "RUNNING") {
			live[j.ArrayJobID]++
		}
	}
	for i := range jobs {
		j := &jobs[i]
		if j.ArrayPending == "" || j.State[0] != "PENDING" || j.Reason != "None" {
			continue
		}
		if a, err := sbatch.ParseArray(j.Desc.Array); err == nil && a.MaxRunning > 0 && live[j.ID] >= a.MaxRunning {
			j.Reason = "JobArrayTaskLimit"
		}
	}
}

// ArrayTask is task index of array arrayID: its own PodGroup once split
// off, before that the array's record; 404 when the array has no such task.
func (b *Backend) ArrayTask(ctx context.Context, arrayID uint32, index int) (slurmapi.Job, error) {
	idText := v1alpha1.FormatJobID(arrayID)
	pgs, err := b.listGroups(ctx, client.MatchingLabels{ArrayJobLabel: idText, ArrayTaskLabel: formatArrayTask(index)})
	if err != nil {
		return slurmapi.Job{}, err
	}
	if len(pgs) > 0 {
		return JobFromPodGroup(&pgs[0])
	}
	record, err := b.podGroup(ctx, arrayID)
	if err != nil {
		return slurmapi.Job{}, err
	}
	if arrayRecord(record) {
		if pending, err := pendingIndices(record); err == nil && slices.Contains(pending, index) {
			return JobFromPodGroup(record)
		}
	}
	return slurmapi.Job{}, slurmapi.NotFound(slurmapi.ErrInvalidJobID, "job_id", "job %d_%d does not exist", arrayID, index)
}
