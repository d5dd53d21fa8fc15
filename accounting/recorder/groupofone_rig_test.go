package recorder

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// groupOfOne creates a bare pod as the webhook admits a group of one: its PodGroup
// named and derived, numbered id (ids above the other rig tests'), in queue nlp.
func (e *rigEnv) groupOfOne(t *testing.T, name string, id int, d time.Duration) *corev1.Pod {
	p := simPod(name, 1, d, 0)
	p.Labels[v1alpha1.JobIDLabel] = fmt.Sprint(id)
	p.Annotations[v1alpha1.PodGroupAnnotation] = name + "-pg"
	p.Annotations[v1alpha1.PodGroupDerivedAnnotation] = "true"
	created, err := e.c.Client().CoreV1().Pods(e.ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// waitState waits until the ledger shows job id in state.
func (e *rigEnv) waitState(t *testing.T, id int64, state accounting.JobState) accounting.Job {
	var j accounting.Job
	e2e.WaitFor(t, fmt.Sprintf("job %d %s in the ledger", id, state), jobTimeout, func(ctx context.Context) (bool, error) {
		jobs, err := e.db.Jobs(ctx, accounting.JobFilter{JobIDs: []int64{id}})
		if err != nil || len(jobs) == 0 {
			return false, err
		}
		j = jobs[0]
		return j.State == state, fmt.Errorf("job %d: %s", id, j.State)
	})
	return j
}

// history is job id's transition states in order.
func (e *rigEnv) history(t *testing.T, id int64) []accounting.JobState {
	ts, err := e.db.Transitions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []accounting.JobState
	for _, tr := range ts {
		out = append(out, tr.State)
	}
	return out
}

// Groups of one, as the webhook admits bare pods, are jobs under their job-id label from
// their first sight: one placed at once runs and completes with no PodGroup written;
// one that waited long enough for the scheduler to write its PodGroup is the same job
// before and after; one deleted while it runs is CANCELLED at its deletion. Deleting a
// finished one changes nothing.
func TestRecordsGroupsOfOne(t *testing.T) {
	e := newRigEnv(t)
	e.startRecorder(t)
	ctx := context.Background()
	pods := e.c.Client().CoreV1().Pods(e.ns)

	placed := e.groupOfOne(t, "lone-placed", 9201, 2*time.Second)
	e.bind(t, placed.Name, cluster.NodeName("h100", 3), 1)
	waited := e.groupOfOne(t, "lone-waited", 9202, 2*time.Second)
	killed := e.groupOfOne(t, "lone-killed", 9203, time.Hour)
	e.bind(t, killed.Name, cluster.NodeName("a100", 0), 1)

	e.waitState(t, 9202, accounting.StatePending)
	pg := jobstate.ImpliedPodGroup(waited) // as the scheduler writes it once the pod has waited
	if err := e.crs.Create(ctx, pg); err != nil {
		t.Fatal(err)
	}
	e.bind(t, waited.Name, cluster.NodeName("h100", 3), 1)

	e.waitState(t, 9203, accounting.StateRunning)
	before := time.Now().UTC().Truncate(time.Second)
	if err := pods.Delete(ctx, killed.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UTC()

	jobs := e.waitFinal(t, 9201, 9202, 9203)
	for _, p := range []*corev1.Pod{placed, waited} {
		id := int64(v1alpha1.JobIDOf(p.Labels))
		j := jobs[id]
		start, end := e.podRun(t, p.Name)
		if j.State != accounting.StateCompleted || j.Name != p.Name || j.PodGroup != p.Name+"-pg" || j.User != v1alpha1.ManifestUser(e.ns) || j.Account != "nlp" ||
			j.Allocated.GPUs != 1 || !j.Submit.Equal(p.CreationTimestamp.UTC()) || !j.Start.Equal(start) || !j.End.Equal(end) {
			t.Errorf("job %d %+v: want %s COMPLETED in nlp by %s on 1 GPU, submitted %s, from %s to %s", id, j, p.Name, e.ns, p.CreationTimestamp.UTC(), start, end)
		}
		if h := e.history(t, id); !slices.Equal(h, []accounting.JobState{"PENDING", "RUNNING", "COMPLETED"}) {
			t.Errorf("job %d history %v: want PENDING, RUNNING, COMPLETED once each", id, h)
		}
	}
	if j := jobs[9203]; j.State != accounting.StateCancelled || j.End.Before(before) || j.End.After(after) {
		t.Errorf("job 9203 %+v: want CANCELLED at its deletion, between %s and %s", j, before, after)
	}
	if all, err := e.db.Jobs(ctx, accounting.JobFilter{Users: []string{v1alpha1.ManifestUser(e.ns)}}); err != nil || len(all) != 3 {
		t.Errorf("ledger holds %d jobs of %s (%v), want the 3 groups of one and no other row", len(all), e.ns, err)
	}

	// A finished group of one deleted (its written PodGroup goes with it) stays as it ended.
	for _, p := range []*corev1.Pod{placed, waited} {
		if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e2e.WaitFor(t, "the finished pods and the written PodGroup gone", jobTimeout, func(ctx context.Context) (bool, error) {
		left, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil || len(left.Items) > 0 {
			return false, err
		}
		err = e.crs.Get(ctx, client.ObjectKeyFromObject(pg), &v1alpha1.PodGroup{})
		return apierrors.IsNotFound(err), err
	})
	// A job submitted after the deletions and seen to its end in the ledger: both
	// watches delivered the deletions before it, so they have been recorded too.
	e.slurmJob(t, "9204", cluster.NodeName("h100", 3), time.Second, 0)
	e.waitFinal(t, 9204)
	for _, id := range []int64{9201, 9202} {
		if h := e.history(t, id); !slices.Equal(h, []accounting.JobState{"PENDING", "RUNNING", "COMPLETED"}) {
			t.Errorf("job %d history after its deletion %v: want it COMPLETED, nothing after", id, h)
		}
	}
}
