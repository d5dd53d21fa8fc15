package recorder

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// With rest.pendingInBatches a pending Slurm job has no PodGroup: it waits as JSON in a
// submit batch (v1alpha1.SubmitBatchLabel) until it starts or is changed, when its
// PodGroup is created under the same namespace, name, job id and submit time. The
// recorder records the batch's copy as that PodGroup, never stored (no resourceVersion,
// so no status is written to it): derive makes of it the PENDING record the stored
// PodGroup will make, so when the PodGroup appears it takes over the same ledger row and
// history, as a written group of one takes over from its implied group (implied.go).
//
// A job whose PodGroup the recorder has seen is never taken from a batch again in this
// process, as the scheduler does (scheduler/batches.go). A job that leaves every batch
// without its PodGroup ever seen was dropped unstored (its batch deleted by hand, or a
// batch whose write timed out removed by the server that wrote it): once the API server
// confirms it holds no such PodGroup (the batch's watch and the PodGroups' are separate
// streams, so the PodGroup the scheduler created before the submit queue removed the
// batch may simply not have arrived yet), it is closed as CANCELLED, as Slurm records a
// job that ended before it started. A scancel of a batched job stores its PodGroup first
// (slurmapi/kube Backend.materialize), so a cancelled job reaches the ledger from that.

// unstoredReason is the reason of the CANCELLED transition of a job dropped from its
// batches without ever being stored.
const unstoredReason = "removed from its submit batch before it was stored"

// batchedJob is a job some batches hold. Once recorded it keeps the batch, not the
// decoded job: the scheduler's informer holds that ConfigMap anyway, so a waiting job
// costs the recorder no copy of itself, and it is decoded again only when it has to be
// derived again (a failed write, its close).
type batchedJob struct {
	batch   *corev1.ConfigMap  // the first batch seen holding it
	id      string             // its data key: the job id
	pg      *v1alpha1.PodGroup // decoded when the batch was read; dropped once recorded
	batches int                // how many batches hold it (a retried submission: two)
	stored  bool               // its PodGroup was seen: the batch's copy is not used again
}

// ReadSubmitBatches makes the recorder record the pending jobs in the submit batches
// list returns, as the scheduler has read them (scheduler.Scheduler.SubmitBatches), read
// before each flush. Call it before Run; without it the recorder sees a batched job only
// once its PodGroup exists.
func (r *Recorder) ReadSubmitBatches(list func() ([]*corev1.ConfigMap, error)) {
	r.batches = list
}

// readBatches brings the state up to the batches list shows now. A batch's jobs are
// written once and never changed (a job leaves one only when the whole batch is removed;
// only the scheduler's pending-reasons annotation changes), so a batch is read the first
// time it is seen, by its UID, and never again.
func (r *Recorder) readBatches(ctx context.Context) {
	if r.batches == nil {
		return
	}
	cms, err := r.batches()
	if err != nil { // the scheduler has not listed them yet: keep what is known
		klog.FromContext(ctx).V(4).Info("submit batches not read yet", "err", err)
		return
	}
	live := make(map[types.UID]bool, len(cms))
	for _, cm := range cms {
		live[cm.UID] = true
		if !r.st.hasBatch(cm.UID) {
			r.st.addBatch(cm, batchJobs(cm))
		}
	}
	r.st.dropBatchesBut(live)
}

// batchJobs decodes batch cm's jobs, by job id, outside the state's lock. An entry that
// does not decode is left out: the submit queue stores it as a failed job, which is
// recorded from its PodGroup.
func batchJobs(cm *corev1.ConfigMap) map[string]*v1alpha1.PodGroup {
	jobs, _ := jobstate.BatchedJobs(cm)
	return jobs
}

func (s *state) hasBatch(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.batchKeys[uid]
	return ok
}

// addBatch records the jobs of a batch seen for the first time, by job id.
func (s *state) addBatch(cm *corev1.ConfigMap, jobs map[string]*v1alpha1.PodGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := make([]string, 0, len(jobs))
	for id, pg := range jobs {
		k := key(pg.Namespace, pg.Name)
		held = append(held, k)
		b := s.batched[k]
		if b == nil {
			b = &batchedJob{batch: cm, id: id, stored: s.groups[k] != nil || s.deleted[k] != nil}
			s.batched[k] = b
			if !b.stored {
				b.pg, s.dirty[k] = pg, true
			}
		}
		b.batches++
		delete(s.unstored, k)
	}
	s.batchKeys[cm.UID] = held
}

// dropBatchesBut forgets the batches not in live. A job no batch holds any more whose
// PodGroup was never seen is to be closed (unstored), once confirmed.
func (s *state) dropBatchesBut(live map[types.UID]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, keys := range s.batchKeys {
		if live[uid] {
			continue
		}
		delete(s.batchKeys, uid)
		for _, k := range keys {
			b := s.batched[k]
			if b == nil {
				continue
			}
			if b.batches--; b.batches > 0 {
				continue
			}
			delete(s.batched, k)
			if !b.stored && s.groups[k] == nil && s.deleted[k] == nil {
				s.unstored[k] = b
				s.dirty[k] = true
			}
		}
	}
}

// sawStoredLocked notes that group k's PodGroup exists: a batch's copy of it is not
// recorded again, and it was not dropped unstored.
func (s *state) sawStoredLocked(k string) {
	if b := s.batched[k]; b != nil {
		b.stored = true
	}
	delete(s.unstored, k)
}

// batchedLocked is the work for group k when no PodGroup of it is seen: its batch's
// copy (decoded by decodeBatched if it was dropped), or, once no batch holds it, its close; false when it
// is neither. Pods seen before their PodGroup belong to the PodGroup the informer has
// yet to deliver, so the copy is derived without them: the job before it started.
func (s *state) batchedLocked(k string) (groupWork, bool) {
	b := s.batched[k]
	if b == nil || b.stored {
		if b = s.unstored[k]; b == nil {
			return groupWork{}, false
		}
	}
	id, _ := v1alpha1.ParseJobID(b.id) // BatchedPodGroup checked it is the job id label
	return groupWork{key: k, id: int64(id), pg: b.pg, batched: b, deleted: s.unstored[k] == b, unstored: s.unstored[k] == b}, true
}

// recordedLocked drops the decoded copy of batched job k once it is written.
func (s *state) recordedLocked(k string) {
	if b := s.batched[k]; b != nil {
		b.pg = nil
	}
}

// decodeBatched decodes the batch's copy of each batched job in work that has none,
// outside the state's lock: the batch decoded when it was first seen, so it decodes again.
func decodeBatched(ctx context.Context, work []groupWork) []groupWork {
	out := work[:0]
	for _, w := range work {
		if b := w.batched; b != nil && w.pg == nil {
			pg, err := jobstate.BatchedPodGroup(b.batch, b.id)
			if err != nil {
				klog.FromContext(ctx).Error(err, "a batched job no longer decodes", "podGroup", w.key)
				continue
			}
			w.pg = pg
		}
		out = append(out, w)
	}
	return out
}

// confirmUnstored keeps of work the jobs dropped from their batches that the API server
// confirms have no PodGroup; one that has is left to the informer, which delivers it.
// A job it cannot ask about is looked at again at the next flush.
func (r *Recorder) confirmUnstored(ctx context.Context, work []groupWork) []groupWork {
	out := work[:0]
	var retry []groupWork
	for _, w := range work {
		if !w.unstored {
			out = append(out, w)
			continue
		}
		stored, err := r.isStored(ctx, client.ObjectKeyFromObject(w.pg))
		switch {
		case err != nil:
			klog.FromContext(ctx).Info("cannot tell whether a job dropped from its submit batch was stored; asking again", "podGroup", w.key, "err", err)
			retry = append(retry, w)
		case stored:
			r.st.forgetUnstored(w.key)
		default:
			out = append(out, w)
		}
	}
	r.st.requeue(retry)
	return out
}

func (s *state) forgetUnstored(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.unstored, k)
}

// podGroupExists asks the API server (not the cache, which may lag) whether PodGroup
// key exists.
func (r *Recorder) podGroupExists(ctx context.Context, k client.ObjectKey) (bool, error) {
	err := r.kube.Get(ctx, k, &v1alpha1.PodGroup{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, err
}
