package scheduler

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Why batched jobs wait. A Slurm job waiting in its submit batch (batches.go) has no
// PodGroup to carry the Scheduled condition, so the scheduler says why it waits on its
// batch instead: one annotation per batch (v1alpha1.PendingReasonsAnnotation) listing the
// reason of each of its jobs that has waited PendingStatusDelay, the reason a stored
// PodGroup would get. squeue, job/{id} and scontrol read it back into the batched job's
// PodGroup (slurmapi/kube/submitbatch_read.go).
//
// The cost stays a fraction of a write per job: a batch is written only when one of its
// jobs newly waits or waits for another reason (the reasons of a cycle are gathered per
// batch, so a cycle writes a batch once), at most once per batchReasonsPeriod, and all
// batches together at most batchReasonsRate times a second; a job that stops waiting (it
// starts) costs no write, its entry going with the batch's next write, and readers ignore
// it meanwhile because its PodGroup is stored. A held job costs nothing: its spec says
// why it waits. Each write is a merge patch of that annotation alone, so it changes nothing
// the Slurm API wrote (the jobs, which are never rewritten). The patch names the batch's
// UID, so it never lands on a batch made anew under the name, and a patch never creates a
// batch the submit queue removed (NotFound). The submit queue removes a batch with its
// resourceVersion as precondition: a patch in between makes the removal fail with a
// conflict, and its next pass removes the batch as the scheduler's informer has it then.
// Since a batch is written only when its reasons change, the removal is not held off.

const (
	// batchReasonsPeriod is the least time between two writes of one batch's reasons.
	batchReasonsPeriod = 10 * time.Second
	// batchReasonsRate and batchReasonsBurst bound the writes of all batches together: a
	// full batch is up to 700 KiB that the API server stores again on each write.
	batchReasonsRate  = 10
	batchReasonsBurst = 50
)

// batchReasonBook is what the scheduler has said on which batch; guarded by the cache's mu.
type batchReasonBook struct {
	dirty    map[string]bool      // batches a job of which newly waits, or for another reason
	written  map[string]string    // batch -> the annotation this scheduler wrote last
	at       map[string]time.Time // batch -> when
	forgotAt time.Time            // when batches gone were last dropped from written and at
	// budget is how many writes all batches may make now, as of budgetAt.
	budget   float64
	budgetAt time.Time
}

// allow takes one write from the budget of all batches, which grows by batchReasonsRate
// a second up to batchReasonsBurst.
func (b *batchReasonBook) allow(now time.Time) bool {
	switch {
	case b.budgetAt.IsZero():
		b.budget, b.budgetAt = batchReasonsBurst, now
	case now.After(b.budgetAt):
		b.budget = min(batchReasonsBurst, b.budget+now.Sub(b.budgetAt).Seconds()*batchReasonsRate)
		b.budgetAt = now
	}
	if b.budget < 1 {
		return false
	}
	b.budget--
	return true
}

func (b *batchReasonBook) markDirty(batch string) {
	if b.dirty == nil {
		b.dirty = map[string]bool{}
	}
	b.dirty[batch] = true
}

// noteBatchedLocked decides what the batch of g, a job waiting in a batch, says of it
// after this cycle: after PendingStatusDelay, why it waits, as groupStatusLocked would
// write into its PodGroup.
func (s *Scheduler) noteBatchedLocked(g *groupEntry, p bridge.Pending, waits bool, now time.Time) {
	var want v1alpha1.BatchedWait
	if waits {
		if g.status.pendingSince.IsZero() {
			g.status.pendingSince = now
		}
		if now.Sub(g.status.pendingSince) >= s.cfg.PendingStatusDelay && p.Code != ReasonJobHeld {
			want = v1alpha1.BatchedWait{Reason: conditionReason(p.Code), Message: p.Reason}
		}
	} else {
		g.status.pendingSince = time.Time{}
	}
	if want == g.status.noted {
		return
	}
	g.status.noted = want
	if want.Reason != "" {
		s.batchBook.markDirty(g.batch)
	}
}

// batchReasonsLocked returns this cycle's writes of batches' reasons.
func (s *Scheduler) batchReasonsLocked(now time.Time) []func(context.Context) {
	b := &s.batchBook
	if now.Sub(b.forgotAt) >= batchReasonsPeriod { // not every cycle: one batch per 256 jobs may be many
		b.forgotAt = now
		for name := range b.written {
			if s.cache.batches[name] == nil {
				delete(b.written, name)
				delete(b.at, name)
			}
		}
	}
	if len(b.dirty) == 0 {
		return nil
	}
	if b.written == nil {
		b.written, b.at = map[string]string{}, map[string]time.Time{}
	}
	names := make([]string, 0, len(b.dirty))
	for name := range b.dirty {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []func(context.Context)
	for _, name := range names {
		if last, ok := b.at[name]; ok && now.Sub(last) < batchReasonsPeriod {
			continue // stays dirty: written when its period is over
		}
		cm := s.submitBatch(name)
		if cm == nil || s.cache.batches[name] == nil {
			delete(b.dirty, name) // removed: nothing to say on it
			continue
		}
		value := v1alpha1.FormatPendingReasons(s.batchWaitsLocked(name))
		have, ok := b.written[name]
		if !ok {
			have = cm.Annotations[v1alpha1.PendingReasonsAnnotation] // a former leader's
		}
		if value == "" || value == have {
			// Nothing new. An empty list is not written: its jobs have started, the
			// batch is about to go, and readers ignore a stored job's stale entry.
			delete(b.dirty, name)
			continue
		}
		if !b.allow(now) {
			break // the rest stay dirty for the next cycles
		}
		delete(b.dirty, name)
		b.written[name], b.at[name] = value, now
		out = append(out, s.batchReasonsWork(cm, value))
	}
	return out
}

// batchWaitsLocked is what batch name says of its waiting jobs, by job id.
func (s *Scheduler) batchWaitsLocked(name string) map[string]v1alpha1.BatchedWait {
	waits := map[string]v1alpha1.BatchedWait{}
	for key := range s.cache.batches[name] {
		g := s.cache.groups[key]
		if g == nil || !g.batched() || g.batch != name || g.status.noted.Reason == "" {
			continue
		}
		waits[g.pg.Labels[v1alpha1.JobIDLabel]] = g.status.noted
	}
	return waits
}

// submitBatch is batch name as the scheduler's informer has it, nil when it has none.
func (s *Scheduler) submitBatch(name string) *corev1.ConfigMap {
	if s.batchInf == nil {
		return nil
	}
	obj, ok, err := s.batchInf.GetStore().GetByKey(s.cfg.SubmitBatchNamespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	cm, _ := obj.(*corev1.ConfigMap)
	return cm
}

// batchReasonsWork writes value as batch cm's reasons: a merge patch of the annotation
// alone, guarded by the batch's UID. The answer (the whole batch) is not decoded.
func (s *Scheduler) batchReasonsWork(cm *corev1.ConfigMap, value string) func(context.Context) {
	ns, name, uid := cm.Namespace, cm.Name, cm.UID
	return func(ctx context.Context) {
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{ // plain values: cannot fail
			"uid": uid, "annotations": map[string]string{v1alpha1.PendingReasonsAnnotation: value}}})
		err := s.kube.CoreV1().RESTClient().Patch(types.MergePatchType).
			Namespace(ns).Resource("configmaps").Name(name).Body(body).Do(ctx).Error()
		switch {
		case err == nil:
		case apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsInvalid(err):
			// Removed, or removed and made anew under its name (the UID differs): the
			// informer will say so and the book forgets it.
		default:
			klog.FromContext(ctx).Info("writing a submit batch's pending reasons failed", "batch", ns+"/"+name, "err", err)
			s.cache.mu.Lock()
			if s.batchBook.written[name] == value {
				delete(s.batchBook.written, name) // the next try compares with what is there
				s.batchBook.markDirty(name)
			}
			s.cache.mu.Unlock()
		}
	}
}
