package kube

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A batch/v1 Job its controller gave up on may have no pod left that says why: past its
// activeDeadlineSeconds (condition FailureTarget, then Failed, reason DeadlineExceeded)
// the controller deletes its running pods; past its backoffLimit after its pods were
// drained off a faulty node (or lost with it), every pod of it was deleted by that
// disruption. Read alone, such pods say the job was stopped, or it seems to run on. The
// lifecycle writes the Job's end on its PodGroup (phase Failed, endTime the condition's,
// endReason DeadlineExceeded, or NodeFail when a pod of it was lost with its node, as
// jobstate's own rule for a run with such a pod), which the job model maps to TIMEOUT or
// NODE_FAIL in every view. It looks only when a Job's pod is being deleted, with one GET
// of the Job: the Job controller deletes pods only as a Job ends or shrinks.

// jobPodDeleted queues the group of a batch/v1 Job's pod whose deletion stopped it (not
// one that ended before, as a finished Job's cleanup deletes them), noting a node
// failure that took it: the pod may be gone when its group is looked at.
func (l *Lifecycle) jobPodDeleted(p *corev1.Pod) {
	if !jobstate.StoppedByDeletion(p) || p.Annotations[v1alpha1.PodGroupAnnotation] == "" || batchJobOf(p.OwnerReferences) == nil {
		return
	}
	key := client.ObjectKey{Namespace: p.Namespace, Name: p.Annotations[v1alpha1.PodGroupAnnotation]}
	if jobstate.Disruption(p) == jobstate.NodeFail {
		l.mu.Lock()
		l.lostWithNode[key] = true
		l.mu.Unlock()
	}
	l.queue.Add(key)
}

// batchJobOf is the batch/v1 Job among owners; nil when none. A Job's pods have it as
// their controller; its PodGroup, as the pod grouper writes it, only as an owner.
func batchJobOf(owners []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range owners {
		if o := &owners[i]; o.APIVersion == "batch/v1" && o.Kind == "Job" {
			return o
		}
	}
	return nil
}

// endFailedJob writes the end of a manifest group whose Job failed past its deadline, or
// after a pod of it was lost with its node.
func (l *Lifecycle) endFailedJob(ctx context.Context, pg *v1alpha1.PodGroup) error {
	key := client.ObjectKeyFromObject(pg)
	owner := batchJobOf(pg.OwnerReferences)
	if owner == nil || jobstate.PhaseFinal(pg.Status.Phase) || pg.DeletionTimestamp != nil {
		l.forgetLostWithNode(key)
		return nil
	}
	var job batchv1.Job
	if err := l.client.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: owner.Name}, &job); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // deleted: the group goes with it, and its deletion ends the job
		}
		return fmt.Errorf("read Job %s/%s: %w", pg.Namespace, owner.Name, err)
	}
	at, reason, failed := jobFailure(&job)
	if !failed || job.UID != owner.UID {
		return nil
	}
	l.mu.Lock()
	lost := l.lostWithNode[key]
	l.mu.Unlock()
	switch {
	case reason == batchv1.JobReasonDeadlineExceeded:
	case lost:
		reason = jobstate.NodeFailReason
	default:
		return nil // its failed pods say how it failed
	}
	err := jobstate.WriteStatus(ctx, l.client.Status(), pg, func(st *v1alpha1.PodGroupStatus) {
		jobstate.MarkEnded(st, v1alpha1.PodGroupFailed, at)
		st.EndReason = reason
	})
	if err != nil {
		return fmt.Errorf("write the end of job %s: %w", pg.Labels[v1alpha1.JobIDLabel], err)
	}
	l.forgetLostWithNode(key)
	return nil
}

func (l *Lifecycle) forgetLostWithNode(key client.ObjectKey) {
	l.mu.Lock()
	delete(l.lostWithNode, key)
	l.mu.Unlock()
}

// jobFailure is when and why the Job controller failed job: its FailureTarget (written
// first, while it stops the pods) or Failed condition, the earlier.
func jobFailure(job *batchv1.Job) (at time.Time, reason string, ok bool) {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobFailureTarget || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue &&
			(!ok || c.LastTransitionTime.Time.Before(at)) {
			at, reason, ok = c.LastTransitionTime.Time, c.Reason, true
		}
	}
	return at, reason, ok
}
