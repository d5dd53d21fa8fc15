package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A Slurm job the scheduler must not place yet (an array's record, a job
// whose --begin is ahead) is stored without members: with nothing to
// place, the scheduler passes it by, and nothing is marked running before
// it may run. Its members wait in DeferredMembersAnnotation until the
// lifecycle controller hands them back (a split array task, a begin time
// reached): one update, the moment the job becomes placeable.

// DeferredMembersAnnotation keeps the members of a job held back from
// the scheduler (JSON of spec.members).
const DeferredMembersAnnotation = "sluice.dev/deferred-members"

// deferMembers moves pg's members into the annotation.
func deferMembers(pg *v1alpha1.PodGroup) {
	members, _ := json.Marshal(pg.Spec.Members) // plain structs: cannot fail
	if pg.Annotations == nil {
		pg.Annotations = map[string]string{}
	}
	pg.Annotations[DeferredMembersAnnotation] = string(members)
	pg.Spec.Members = nil
}

// restoreMembers hands pg's deferred members back to the scheduler.
func restoreMembers(pg *v1alpha1.PodGroup) {
	pg.Spec.Members = taskMembers(pg)
	delete(pg.Annotations, DeferredMembersAnnotation)
}

// taskMembers is what the job's pods need: its members, or those it
// will get when it is handed to the scheduler.
func taskMembers(pg *v1alpha1.PodGroup) []v1alpha1.MemberSet {
	if len(pg.Spec.Members) > 0 || pg.Annotations[DeferredMembersAnnotation] == "" {
		return pg.Spec.Members
	}
	var m []v1alpha1.MemberSet
	if err := json.Unmarshal([]byte(pg.Annotations[DeferredMembersAnnotation]), &m); err != nil {
		return nil
	}
	return m
}

// waitsForBegin reports whether pg is a plain job held back until its
// begin time (an array's record waits in splitArray instead).
func waitsForBegin(pg *v1alpha1.PodGroup) bool {
	return len(pg.Spec.Members) == 0 && pg.Annotations[DeferredMembersAnnotation] != "" && !arrayRecord(pg)
}

// releaseAtBegin hands a job its members once its begin time has come,
// and otherwise says when to look again.
func (l *Lifecycle) releaseAtBegin(ctx context.Context, pg *v1alpha1.PodGroup) (time.Duration, error) {
	if wait := time.Until(beginTime(pg)); wait > 0 {
		return wait, nil
	}
	if jobstate.PhaseFinal(pg.Status.Phase) {
		return 0, nil
	}
	next := pg.DeepCopy()
	restoreMembers(next)
	if err := l.client.Update(ctx, next); err != nil {
		return 0, fmt.Errorf("release job %s at its begin time: %w", pg.Labels[v1alpha1.JobIDLabel], err)
	}
	return 0, nil
}
