package recorder

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// loneID is the job id the webhook gave the group of one in these tests.
const loneID = 4242

// lonePod is a group-of-one pod as the webhook admits it, created at(0): bare, its
// PodGroup named and derived, numbered with loneID, in queue vision. node "" leaves it
// unbound; start, phase, exit and finished are as for pod.
func lonePod(node string, start int, phase corev1.PodPhase, exit int32, finished int) *corev1.Pod {
	p := pod("infer", node, start, phase, exit, finished, map[string]string{
		v1alpha1.PodGroupAnnotation: "infer-pg", v1alpha1.PodGroupDerivedAnnotation: "true",
		v1alpha1.GPUAssignmentAnnotation: `{"gpus":[{"index":0},{"index":1}],"portion":1}`})
	p.Namespace, p.UID, p.CreationTimestamp = "team", types.UID("uid-infer"), metav1.NewTime(at(0))
	p.Labels = map[string]string{v1alpha1.JobIDLabel: fmt.Sprint(loneID), v1alpha1.QueueLabel: "vision"}
	return p
}

// deleting is p being deleted, asked for at(s) with a 30 s grace period.
func deleting(p *corev1.Pod, s int) *corev1.Pod {
	grace := int64(30)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = mt(s+30), &grace
	return p
}

// finalDelete is p as its kubelet's last delete (grace 0, at(s)) leaves it.
func finalDelete(p *corev1.Pod, s int) *corev1.Pod {
	var zero int64
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = mt(s), &zero
	return p
}

// written is the PodGroup the scheduler writes for the group of one, with mutate's status.
func writtenGroup(mutate func(*v1alpha1.PodGroup)) *v1alpha1.PodGroup {
	pg := jobstate.ImpliedPodGroup(lonePod("", -1, corev1.PodPending, -1, 0))
	pg.UID = "uid-infer-pg"
	if mutate != nil {
		mutate(pg)
	}
	return pg
}

// event is one informer callback, followed by a flush.
type event func(*state)

func podSeen(p *corev1.Pod) event          { return func(s *state) { s.setPod(p) } }
func podGone(p *corev1.Pod) event          { return func(s *state) { s.deletePod(p) } }
func groupSeen(g *v1alpha1.PodGroup) event { return func(s *state) { s.setGroup(g) } }
func groupGone(g *v1alpha1.PodGroup) event { return func(s *state) { s.deleteGroup(g) } }

// together is several callbacks between two flushes.
func together(evs ...event) event {
	return func(s *state) {
		for _, ev := range evs {
			ev(s)
		}
	}
}

type step struct {
	State accounting.JobState
	At    int
}

// historyOf is a job's history as steps, seconds after t0.
func historyOf(hist []accounting.Transition) []step {
	var out []step
	for _, tr := range hist {
		out = append(out, step{tr.State, int(tr.At.Sub(t0).Seconds())})
	}
	return out
}

// A group of one is one job under its job-id label from its first sight, whether or not
// its PodGroup is ever written, and ends once: as its pod ends, else when it is deleted.
func TestFlushRecordsGroupsOfOne(t *testing.T) {
	evicted := writtenGroup(func(pg *v1alpha1.PodGroup) {
		pg.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupConditionEvicted, Status: "True", Reason: "Reclaim", Message: "for job 9", LastTransitionTime: *mt(50)}}
	})
	waited := writtenGroup(func(pg *v1alpha1.PodGroup) {
		pg.Status.Conditions = []metav1.Condition{{Type: "Unschedulable", Status: "True", Reason: "NoFit", LastTransitionTime: *mt(2)}}
	})
	tests := []struct {
		name   string
		events []event
		want   []step // the job's whole history in the ledger
		exit   int
	}{
		{name: "placed at once and finished", events: []event{
			podSeen(lonePod("", -1, corev1.PodPending, -1, 0)),
			podSeen(lonePod("n1", 5, corev1.PodRunning, -1, 0)),
			podSeen(lonePod("n1", 5, corev1.PodSucceeded, 0, 65)),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 5}, {"COMPLETED", 65}}},
		{name: "finished, then deleted", events: []event{
			podSeen(lonePod("n1", 5, corev1.PodRunning, -1, 0)),
			podSeen(lonePod("n1", 5, corev1.PodFailed, 3, 65)),
			podSeen(deleting(lonePod("n1", 5, corev1.PodFailed, 3, 65), 300)),
			podGone(deleting(lonePod("n1", 5, corev1.PodFailed, 3, 65), 300)),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 5}, {"FAILED", 65}}, exit: 3},
		{name: "waited, PodGroup written, then ran", events: []event{
			podSeen(lonePod("", -1, corev1.PodPending, -1, 0)),
			groupSeen(waited),
			podSeen(lonePod("n1", 5, corev1.PodRunning, -1, 0)),
			podSeen(lonePod("n1", 5, corev1.PodSucceeded, 0, 65)),
			podGone(deleting(lonePod("n1", 5, corev1.PodSucceeded, 0, 65), 300)),
			groupGone(waited),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 5}, {"COMPLETED", 65}}},
		{name: "deleted while running, no PodGroup written", events: []event{
			podSeen(lonePod("n1", 5, corev1.PodRunning, -1, 0)),
			podSeen(deleting(lonePod("n1", 5, corev1.PodRunning, -1, 0), 100)),
			podSeen(deleting(lonePod("n1", 5, corev1.PodFailed, 143, 101), 100)), // the kubelet stopped it
			podGone(deleting(lonePod("n1", 5, corev1.PodFailed, 143, 101), 100)),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 5}, {"CANCELLED", 100}}},
		// The kubelet removes a pod it stopped with a second delete of grace 0, which
		// moves deletionTimestamp past the stop: the first request still decides.
		{name: "deleted while running, removed by the kubelet's final delete a second later", events: []event{
			podSeen(lonePod("n1", 5, corev1.PodRunning, -1, 0)),
			together(podSeen(deleting(lonePod("n1", 5, corev1.PodRunning, -1, 0), 100)),
				podSeen(deleting(lonePod("n1", 5, corev1.PodFailed, 143, 101), 100)),
				podGone(finalDelete(lonePod("n1", 5, corev1.PodFailed, 143, 101), 102))),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 5}, {"CANCELLED", 100}}},
		{name: "deleted while pending", events: []event{
			podSeen(lonePod("", -1, corev1.PodPending, -1, 0)),
			podSeen(deleting(lonePod("", -1, corev1.PodPending, -1, 0), 40)),
			podGone(deleting(lonePod("", -1, corev1.PodPending, -1, 0), 40)),
		}, want: []step{{"PENDING", 0}, {"CANCELLED", 40}}},
		{name: "removed at once while running", events: []event{
			podSeen(lonePod("n1", 5, corev1.PodRunning, -1, 0)),
			podGone(lonePod("n1", 5, corev1.PodRunning, -1, 0)),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 5}, {"CANCELLED", 500}}},
		{name: "evicted: PodGroup written, pod and then PodGroup deleted: nothing recreates a bare pod", events: []event{
			podSeen(lonePod("n1", 5, corev1.PodRunning, -1, 0)),
			groupSeen(evicted),
			podSeen(deleting(lonePod("n1", 5, corev1.PodRunning, -1, 0), 50)),
			podGone(deleting(lonePod("n1", 5, corev1.PodFailed, 143, 51), 50)),
			groupGone(func() *v1alpha1.PodGroup { g := evicted.DeepCopy(); g.DeletionTimestamp = mt(52); return g }()),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 5}, {"PREEMPTED", 50}}},
		// A drain's eviction through the Eviction API (no PodGroup condition): the
		// pod's DisruptionTarget says so, and deleting the pod does not cancel it.
		{name: "evicted through the Eviction API: nothing recreates a bare pod", events: []event{
			podSeen(lonePod("n1", 5, corev1.PodRunning, -1, 0)),
			podSeen(evictedAPI(deleting(lonePod("n1", 5, corev1.PodRunning, -1, 0), 50))),
			podGone(evictedAPI(deleting(lonePod("n1", 5, corev1.PodRunning, -1, 0), 50))),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 5}, {"PREEMPTED", 50}}},
		// Its pod's deletion is the last the recorder sees of it: the pod's last state
		// still says how it went.
		{name: "PodGroup written, pod evicted and gone at once, then the PodGroup", events: []event{
			podSeen(lonePod("", -1, corev1.PodPending, -1, 0)),
			groupSeen(waited),
			podSeen(lonePod("n1", 5, corev1.PodRunning, -1, 0)),
			podGone(evictedAPI(deleting(lonePod("n1", 5, corev1.PodRunning, -1, 0), 50))),
			groupGone(func() *v1alpha1.PodGroup { g := waited.DeepCopy(); g.DeletionTimestamp = mt(52); return g }()),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 5}, {"PREEMPTED", 50}}},
		{name: "PodGroup deleted while the pod runs on", events: []event{
			podSeen(lonePod("", -1, corev1.PodPending, -1, 0)),
			groupSeen(waited),
			podSeen(lonePod("n1", 5, corev1.PodRunning, -1, 0)),
			groupGone(waited),
			podSeen(lonePod("n1", 5, corev1.PodSucceeded, 0, 65)),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 5}, {"COMPLETED", 65}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, db := newOfflineRecorder(t, func() time.Time { return at(500) })
			ctx := context.Background()
			for i, ev := range tt.events {
				ev(r.st)
				if err := r.flush(ctx); err != nil {
					t.Fatalf("flush after event %d: %v", i, err)
				}
			}
			jobs, err := db.Jobs(ctx, accounting.JobFilter{})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("ledger %+v, %v: want one job", jobs, err)
			}
			j, gpus := jobs[0], 0.0
			if tt.want[1].State != accounting.StateCancelled { // it ran
				gpus = 2
			}
			if j.JobID != loneID || j.Name != "infer" || j.User != "ns:team" || j.Account != "vision" || j.PodGroup != "infer-pg" ||
				j.Namespace != "team" || !j.Submit.Equal(at(0)) || j.Origin != accounting.OriginKubernetes || j.Allocated.GPUs != gpus {
				t.Errorf("job %+v: want %d, infer by team in vision, PodGroup infer-pg, submitted %s, on %v GPUs", j, loneID, at(0), gpus)
			}
			hist, err := db.Transitions(ctx, loneID)
			if err != nil {
				t.Fatal(err)
			}
			got := historyOf(hist)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || j.State != tt.want[len(tt.want)-1].State {
				t.Errorf("history %v, state %s; want %v", got, j.State, tt.want)
			}
			if j.ExitCode != tt.exit {
				t.Errorf("exit code %d, want %d", j.ExitCode, tt.exit)
			}
		})
	}
}

// Pods that are not groups of one wait for a written PodGroup as before: one owned by a
// Job, one without a job id (no id source was configured), one that named its PodGroup
// itself.
func TestFlushWaitsForTheGroupOfOtherPods(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
	}{
		{"owned by a Job", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "infer", UID: "job-uid"}}
		}},
		{"no job id", func(p *corev1.Pod) { delete(p.Labels, v1alpha1.JobIDLabel) }},
		{"PodGroup named by the user", func(p *corev1.Pod) { delete(p.Annotations, v1alpha1.PodGroupDerivedAnnotation) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, db := newOfflineRecorder(t, func() time.Time { return at(500) })
			p := lonePod("n1", 5, corev1.PodRunning, -1, 0)
			tt.mutate(p)
			r.st.setPod(p)
			if err := r.flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			if jobs, err := db.Jobs(context.Background(), accounting.JobFilter{}); err != nil || len(jobs) != 0 {
				t.Errorf("ledger %+v, %v: want nothing before the pod's PodGroup is seen", jobs, err)
			}
		})
	}
}

// A workload whose pods finished and were deleted before its PodGroup (a finished Job
// deleted: the garbage collector removes both) keeps the end its pods showed; it is not
// cancelled at the deletion.
func TestFlushKeepsTheEndOfAWorkloadWhosePodsWentFirst(t *testing.T) {
	r, db := newOfflineRecorder(t, func() time.Time { return at(500) })
	ctx := context.Background()
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train-1a2b", Namespace: "team", UID: "pg-uid",
		CreationTimestamp: metav1.NewTime(at(0)), OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "train", UID: "job-uid"}}},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "vision"}}
	done := pod("train-x1", "n1", 5, corev1.PodSucceeded, 0, 65, map[string]string{})
	done.Namespace, done.OwnerReferences = "team", pg.OwnerReferences
	gone := pg.DeepCopy()
	gone.DeletionTimestamp = mt(300)
	for _, ev := range []event{groupSeen(pg), podSeen(done), podSeen(deleting(done.DeepCopy(), 290)), podGone(deleting(done.DeepCopy(), 290)), groupGone(gone)} {
		ev(r.st)
		if err := r.flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	hist, err := db.Transitions(ctx, JobID(pg))
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 3 || hist[2].State != accounting.StateCompleted || !hist[2].At.Equal(at(65)) {
		t.Errorf("history %+v: want PENDING, RUNNING, COMPLETED at %s and nothing after", hist, at(65))
	}
}

// evictedAPI marks p as evicted through the Eviction API.
func evictedAPI(p *corev1.Pod) *corev1.Pod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
	return p
}
