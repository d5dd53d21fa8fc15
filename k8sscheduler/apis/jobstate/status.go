package jobstate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Every change to a PodGroup's status goes through this file: WriteStatus for what
// a component decides (the scheduler's phase and conditions, the Slurm lifecycle's
// ends and requeues, scancel), WriteDerivedState for the read model's own two
// fields. The transitions a job's status goes through (MarkEnded, MarkRequeued) are here too,
// so the components that end or requeue a job cannot disagree on what that clears.

// StatusWriter writes the status subresource: a controller-runtime client's Status().
type StatusWriter = client.SubResourceWriter

// WriteStatus applies change to a copy of pg's status and writes what it changed as
// one merge patch guarded by pg's resourceVersion: a writer that decided on a stale
// copy gets a Conflict (and decides again) instead of overwriting fields it never
// saw, and fields it did not touch (another writer's conditions, the derived state)
// are not sent at all. It writes nothing when change changes nothing. pg is left as
// it was.
func WriteStatus(ctx context.Context, w StatusWriter, pg *v1alpha1.PodGroup, change func(*v1alpha1.PodGroupStatus)) error {
	next := pg.DeepCopy()
	change(&next.Status)
	body, err := statusPatch(pg, &next.Status)
	if err != nil || body == nil {
		return err
	}
	return w.Patch(ctx, next, client.RawPatch(types.MergePatchType, body))
}

// statusPatch is the merge patch from pg's status to next, with pg's resourceVersion as
// its precondition; nil when they are the same.
func statusPatch(pg *v1alpha1.PodGroup, next *v1alpha1.PodGroupStatus) ([]byte, error) {
	before, err := json.Marshal(pg.Status)
	if err != nil {
		return nil, err
	}
	after, err := json.Marshal(next)
	if err != nil {
		return nil, err
	}
	diff, err := jsonpatch.CreateMergePatch(before, after)
	if err != nil {
		return nil, fmt.Errorf("status patch of PodGroup %s/%s: %w", pg.Namespace, pg.Name, err)
	}
	if string(diff) == "{}" {
		return nil, nil
	}
	rv, _ := json.Marshal(pg.ResourceVersion) // a string: cannot fail
	return fmt.Appendf(nil, `{"metadata":{"resourceVersion":%s},"status":%s}`, rv, diff), nil
}

// WriteDerivedState writes the job's state and reason as the read model derived them
// (status.state and status.reason, which `kubectl get podgroups` shows). It is the one
// unguarded write: the recorder derives the two from everything else, so the last
// derivation is the right one whatever was read before it, and no other field is sent.
func WriteDerivedState(ctx context.Context, w StatusWriter, namespace, name string, state State, reason string) error {
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"state": state, "reason": reason}}) // plain strings: cannot fail
	pg := &v1alpha1.PodGroup{}
	pg.Namespace, pg.Name = namespace, name
	return w.Patch(ctx, pg, client.RawPatch(types.MergePatchType, body))
}

// PhaseFinal reports whether a group in phase p has ended: it holds nothing, is not
// scheduled again, and its job's end is recorded (a requeue makes it Pending again).
func PhaseFinal(p v1alpha1.PodGroupPhase) bool {
	switch p {
	case v1alpha1.PodGroupSucceeded, v1alpha1.PodGroupFailed, v1alpha1.PodGroupCancelled,
		v1alpha1.PodGroupTimedOut, v1alpha1.PodGroupPreempted:
		return true
	}
	return false
}

// MarkEnded records a job's end in phase at at: no pod of it runs any more. Why it ended
// (ExitCode, EndReason) is the caller's to add.
func MarkEnded(st *v1alpha1.PodGroupStatus, phase v1alpha1.PodGroupPhase, at time.Time) {
	end := metav1.NewTime(at)
	st.Phase, st.EndTime, st.Running = phase, &end, 0
}

// MarkRequeued returns a started or ended job to Pending at now, with one more requeue: what
// its last run left (start, end, nodes, exit code, end reason, pod counts) is cleared,
// as slurmctld clears a requeued job's run.
func MarkRequeued(st *v1alpha1.PodGroupStatus, now time.Time) {
	requeued := metav1.NewTime(now)
	st.Phase, st.StartTime, st.EndTime, st.Nodes, st.ExitCode, st.EndReason = v1alpha1.PodGroupPending, nil, nil, nil, nil, ""
	st.Running, st.Succeeded, st.Failed = 0, 0, 0
	st.Requeues, st.LastRequeueTime = st.Requeues+1, &requeued
}
