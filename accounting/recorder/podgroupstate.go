package recorder

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
)

// The recorder is the one writer of a PodGroup's status.state and status.reason, the
// fields kubectl's columns show: it derives every group on each change anyway, and it
// alone runs on the leader for every workload. Each write is a merge patch of those two
// fields only, so it can never drop a field or condition another writer owns (the
// scheduler's phase and Scheduled condition, the lifecycle's end), and being their only
// writer, it needs no resourceVersion: the last write is the latest derivation. A bare
// pod's group that has no PodGroup object (most never get one) costs nothing.

// stateWriters bounds the status patches one flush sends at once.
const stateWriters = 8

// shownState is the state as squeue shows it: COMPLETING for a job that ended while its
// pods still terminate, else its state.
func shownState(v jobstate.View) string {
	if v.Completing {
		return string(jobstate.Completing)
	}
	return string(v.State)
}

// stateChange is one group's state to write.
type stateChange struct {
	w             groupWork
	state, reason string
}

// stateChanges are the groups of work whose written state or reason differs from what
// the read model derives now; deleted groups and groups with no PodGroup object (a bare
// pod's implied group) have nothing to write to.
func stateChanges(work []groupWork, now time.Time) []stateChange {
	var out []stateChange
	for _, w := range work {
		if w.deleted || !jobstate.IsStored(w.pg) || w.pg.DeletionTimestamp != nil {
			continue
		}
		v := jobstate.Derive(w.pg, w.pods, now)
		if st := shownState(v); st != w.pg.Status.State || v.Reason != w.pg.Status.Reason {
			out = append(out, stateChange{w: w, state: st, reason: v.Reason})
		}
	}
	return out
}

// writeStates patches each changed group's status.state and status.reason. A group whose
// write failed is derived again at the next flush; one deleted meanwhile is left alone.
func (r *Recorder) writeStates(ctx context.Context, work []groupWork, now time.Time) {
	changes := stateChanges(work, now)
	if len(changes) == 0 || r.kube == nil {
		return
	}
	var mu sync.Mutex
	var retry []groupWork
	sem := make(chan struct{}, stateWriters)
	var wg sync.WaitGroup
	for _, c := range changes {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := r.patchState(ctx, c); err != nil && !apierrors.IsNotFound(err) {
				klog.FromContext(ctx).Info("writing PodGroup state failed; retrying at the next flush", "podGroup", c.w.key, "err", err)
				mu.Lock()
				retry = append(retry, c.w)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.st.requeue(retry)
}

func (r *Recorder) patchState(ctx context.Context, c stateChange) error {
	return jobstate.WriteDerivedState(ctx, r.kube.Status(), c.w.pg.Namespace, c.w.pg.Name, jobstate.State(c.state), c.reason)
}
