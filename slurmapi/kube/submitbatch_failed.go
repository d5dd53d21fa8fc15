package kube

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// An acknowledged job id is never lost. Submissions are validated against
// everything the API server checks before an id is given, so the cluster
// should never refuse a batched job's PodGroup; if it still does (a
// schema Sluice does not know of, an admission policy), the job is kept
// as a PodGroup that cannot be refused: its id, owner, account, partition
// and name, no members (nothing to place), ended FAILED with the refusal
// as its condition. squeue, job/{id} and sacct then show it, as Slurm
// shows a job that failed to launch.

// ConditionStored is False on a job whose PodGroup the cluster refused;
// its message is the API server's answer.
const ConditionStored = "Stored"

// reasonStoreRefused is the condition's reason, and the job's Slurm
// reason: Slurm's FAIL_SYSTEM.
const reasonStoreRefused = "SystemFailure"

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// failedJob is what stays of job id (pg may be nil when its batch entry
// did not decode) in namespace ns when pg was refused.
func failedJob(id uint32, ns string, pg *v1alpha1.PodGroup) *v1alpha1.PodGroup {
	out := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: PodGroupName(id), Namespace: ns, Labels: map[string]string{v1alpha1.JobIDLabel: v1alpha1.FormatJobID(id)}},
		Spec:       v1alpha1.PodGroupSpec{MinMember: 1, Queue: "unknown", Slurm: &v1alpha1.SlurmJob{User: "unknown", Nodes: 1, Tasks: 1, CPUsPerTask: 1}},
	}
	if pg == nil {
		return out
	}
	if dnsLabel.MatchString(pg.Namespace) && len(pg.Namespace) <= 63 {
		out.Namespace = pg.Namespace
	}
	for _, f := range []struct {
		from string
		to   *string
	}{{pg.Spec.Queue, &out.Spec.Queue}, {pg.Spec.Partition, &out.Spec.Partition}, {pg.Spec.QOS, &out.Spec.QOS}} {
		if len(f.from) <= 63 && dnsLabel.MatchString(f.from) {
			*f.to = f.from
		}
	}
	out.Labels[v1alpha1.QueueLabel] = out.Spec.Queue
	if out.Spec.Partition != "" {
		out.Labels[v1alpha1.PartitionLabel] = out.Spec.Partition
	}
	if out.Annotations == nil && pg.Annotations[SubmitTimeAnnotation] != "" {
		out.Annotations = map[string]string{SubmitTimeAnnotation: pg.Annotations[SubmitTimeAnnotation]}
	}
	if s := pg.Spec.Slurm; s != nil {
		out.Spec.Slurm.Name = printable(s.Name, slurmapi.MaxNameChars)
		if u := printable(s.User, slurmapi.MaxUserChars); u != "" {
			out.Spec.Slurm.User = u
		}
		if s.Nodes > 0 && s.Tasks >= s.Nodes {
			out.Spec.Slurm.Nodes, out.Spec.Slurm.Tasks = s.Nodes, s.Tasks
		}
	}
	return out
}

// printable is s without control characters, at most limit characters.
func printable(s string, limit int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return -1
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > limit {
		s = string([]rune(s)[:limit])
	}
	return s
}

// keepFailed stores job key of batch namespace ns, refused for why, as a
// failed job: created if it is not there, then ended FAILED. Both steps
// are idempotent, so a queue pass that fails midway is simply repeated.
func (q *SubmitQueue) keepFailed(ctx context.Context, ns string, key string, pg *v1alpha1.PodGroup, why error) error {
	stub := failedJob(jobKey(key), ns, pg)
	err := q.c.Create(ctx, stub)
	if apierrors.IsNotFound(err) { // its namespace went away: keep it beside the batch
		stub.Namespace = ns
		err = q.c.Create(ctx, stub)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("keep refused job %s as failed: %w", key, err)
	}
	var stored v1alpha1.PodGroup
	if err := q.c.Get(ctx, client.ObjectKeyFromObject(stub), &stored); err != nil {
		return fmt.Errorf("keep refused job %s as failed: %w", key, err)
	}
	if jobstate.PhaseFinal(stored.Status.Phase) {
		return nil
	}
	err = jobstate.WriteStatus(ctx, q.c.Status(), &stored, func(st *v1alpha1.PodGroupStatus) {
		code := int32(1)
		jobstate.MarkEnded(st, v1alpha1.PodGroupFailed, time.Now())
		st.ExitCode = &code
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: ConditionStored, Status: metav1.ConditionFalse, Reason: reasonStoreRefused,
			Message: printable("the cluster refused the job's PodGroup: "+why.Error(), 32<<10),
		})
	})
	if err != nil {
		return fmt.Errorf("end refused job %s as failed: %w", key, err)
	}
	return nil
}

// storeRefused reports whether pg is a job kept as failed because the
// cluster refused it, and why.
func storeRefused(pg *v1alpha1.PodGroup) (string, bool) {
	c := meta.FindStatusCondition(pg.Status.Conditions, ConditionStored)
	if c == nil || c.Status != metav1.ConditionFalse {
		return "", false
	}
	return c.Message, true
}
