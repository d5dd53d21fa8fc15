package kube

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// Pending jobs kept in their batches. When the scheduler reads pending Slurm jobs from
// the batches (scheduler.Config.SubmitBatchNamespace), a job's PodGroup is written when it
// starts (by the scheduler) or is changed (scancel, hold, update: Backend.materialize), not
// when it is submitted. The queue then stores only the jobs that must be objects while
// they wait, for the lifecycle to act on: a --dependency (judged into the Eligible
// condition), the jobs a dependency names, and jobs held back from the scheduler (an
// array's record, a --begin ahead). It removes a batch once every job of it is stored,
// reading the batches as the scheduler has read them and the PodGroups from the leader's
// informer cache, so a pass costs the API server nothing but its writes.

// keepPassEvery is the pause between two passes over the kept batches.
const keepPassEvery = 2 * time.Second

// KeepPending turns the queue to keeping pending jobs in their batches: batches lists
// them as the scheduler read them; groups reads PodGroups (the leader's informer cache).
func (q *SubmitQueue) KeepPending(batches func() ([]*corev1.ConfigMap, error), groups client.Reader) {
	q.batches, q.groups = batches, groups
}

// runKeeping is Run when the queue keeps pending jobs in their batches.
func (q *SubmitQueue) runKeeping(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := q.keepPass(ctx); err != nil {
			klog.FromContext(ctx).Info("submit queue: batches wait for the next pass", "err", err)
		}
		sleep(ctx, keepPassEvery)
	}
	return nil
}

// keptJob is what a pass needs of one batched job, decoded once per batch.
type keptJob struct {
	key     string
	group   client.ObjectKey // its PodGroup's namespace and name
	object  bool             // it must be stored while it waits (mustBeObject)
	names   []uint32         // the job ids its dependency names
	invalid error            // the entry does not decode
}

// keptJobs reads batch cm's jobs, decoding it only the first time it is seen: with tens
// of thousands of jobs waiting, a pass must not decode them all again.
func (q *SubmitQueue) keptJobs(cm *corev1.ConfigMap) []keptJob {
	if jobs, ok := q.decoded[cm.UID]; ok {
		return jobs
	}
	jobs := make([]keptJob, 0, len(cm.Data))
	for key := range cm.Data {
		j := keptJob{key: key}
		pg, err := jobstate.BatchedPodGroup(cm, key)
		if err != nil {
			j.invalid = err
			jobs = append(jobs, j)
			continue
		}
		j.group, j.object = client.ObjectKeyFromObject(pg), mustBeObject(pg)
		if s := pg.Spec.Slurm; s != nil && s.Dependency != "" {
			if deps, err := sbatch.ParseDependency(s.Dependency); err == nil {
				for _, d := range deps.List {
					j.names = append(j.names, d.Jobs...)
				}
			}
		}
		jobs = append(jobs, j)
	}
	slices.SortFunc(jobs, func(a, b keptJob) int { return int(jobKey(a.key)) - int(jobKey(b.key)) })
	q.decoded[cm.UID] = jobs
	return jobs
}

// keepPass stores the batched jobs that must be objects and removes the batches whose
// jobs are all stored, lowest ids first.
func (q *SubmitQueue) keepPass(ctx context.Context) error {
	batches, err := q.batches()
	if err != nil {
		return err
	}
	slices.SortFunc(batches, func(a, b *corev1.ConfigMap) int { return int(lowestID(a)) - int(lowestID(b)) })
	if q.decoded == nil {
		q.decoded = map[types.UID][]keptJob{}
	}
	live := make(map[types.UID]bool, len(batches))
	named := map[uint32]bool{} // the lifecycle judges a dependency from the named jobs' PodGroups
	for _, cm := range batches {
		live[cm.UID] = true
		for _, j := range q.keptJobs(cm) {
			for _, id := range j.names {
				named[id] = true
			}
		}
	}
	for uid := range q.decoded {
		if !live[uid] {
			delete(q.decoded, uid)
		}
	}
	var first error
	for _, cm := range batches {
		if err := q.keepBatch(ctx, cm, named); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// keepBatch stores what of one batch must be an object and removes the batch when all
// of its jobs are stored.
func (q *SubmitQueue) keepBatch(ctx context.Context, cm *corev1.ConfigMap, named map[uint32]bool) error {
	waiting := 0
	for _, j := range q.keptJobs(cm) {
		if j.invalid != nil {
			// Kept as a failed job once (submitbatch_failed.go), not reported every pass.
			if stored, serr := q.isStored(ctx, client.ObjectKeyFromObject(failedJob(jobKey(j.key), cm.Namespace, nil))); serr == nil && stored {
				continue
			}
			if err := q.refuse(ctx, cm, j.key, nil, j.invalid); err != nil {
				return err
			}
			continue
		}
		stored, err := q.isStored(ctx, j.group)
		if err != nil {
			return err
		}
		switch {
		case stored:
		case j.object || named[jobKey(j.key)]:
			pg, err := jobstate.BatchedPodGroup(cm, j.key)
			if err != nil {
				return err
			}
			if err := q.create(ctx, cm, j.key, pg); err != nil {
				return err
			}
		default:
			waiting++ // the scheduler stores it when it starts
		}
	}
	if waiting > 0 {
		return nil
	}
	uid, rv := cm.UID, cm.ResourceVersion
	err := q.c.Delete(ctx, cm.DeepCopy(), client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("remove stored batch %s: %w", cm.Name, err)
	}
	return nil
}

// mustBeObject reports whether a batched job must be stored while it waits: the
// scheduler places from a batch only a Slurm job with members and no dependency.
func mustBeObject(pg *v1alpha1.PodGroup) bool {
	return pg.Spec.Slurm == nil || len(pg.Spec.Members) == 0 || pg.Spec.Slurm.Dependency != ""
}

// isStored reports whether the PodGroup key exists, as the informer cache has it.
func (q *SubmitQueue) isStored(ctx context.Context, key client.ObjectKey) (bool, error) {
	var have v1alpha1.PodGroup
	err := q.groups.Get(ctx, key, &have)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("read the PodGroup of batched job %s: %w", key, err)
}
