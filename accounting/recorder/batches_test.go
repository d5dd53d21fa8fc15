package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// heldJob is Slurm job 7 as the REST API batches it: held, submitted at(0), never
// stored (no UID, no creationTimestamp).
func heldJob() *v1alpha1.PodGroup {
	return slurmGroup("7", func(pg *v1alpha1.PodGroup) {
		pg.UID, pg.CreationTimestamp = "", metav1.Time{}
		pg.Annotations = map[string]string{v1alpha1.SubmitTimeAnnotation: at(0).Format(time.RFC3339Nano)}
		pg.Spec.Slurm.Hold = true
		pg.Spec.Slurm.Script = "#!/bin/bash\nsrun train.py\n"
	})
}

// storedJob is job 7's PodGroup as the scheduler or a change creates it at(12), from the
// batch's copy, with status mutated.
func storedJob(mutate func(*v1alpha1.PodGroup)) *v1alpha1.PodGroup {
	pg := heldJob()
	pg.UID, pg.ResourceVersion, pg.CreationTimestamp = "uid-job-7", "1", metav1.NewTime(at(12))
	pg.Spec.Slurm.Hold = false
	if mutate != nil {
		mutate(pg)
	}
	return pg
}

// jobPod is one of job 7's pods, running on n1 since at(15), or ended.
func jobPod(name string, phase corev1.PodPhase, exit int32, finished int) *corev1.Pod {
	return pod(name, "n1", 15, phase, exit, finished, map[string]string{v1alpha1.PodGroupAnnotation: "job-7"})
}

// batch is a submit batch holding jobs, as the REST API writes it.
func batch(uid string, jobs ...*v1alpha1.PodGroup) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "submit-batch-" + uid, Namespace: "sluice-system", UID: types.UID(uid),
		Labels: map[string]string{v1alpha1.SubmitBatchLabel: "true"}}, Data: map[string]string{}}
	for _, pg := range jobs {
		b, _ := json.Marshal(pg) // plain values: cannot fail
		cm.Data[pg.Labels[v1alpha1.JobIDLabel]] = string(b)
	}
	return cm
}

// batchRig is what the recorder sees of the batches and the API server in one test.
type batchRig struct {
	batches []*corev1.ConfigMap
	listErr error // the scheduler has not listed them yet
	stored  bool  // the API server holds job 7's PodGroup
	getErr  error
	asked   int // how often the API server was asked
}

// batchEvent is one change seen before a flush.
type batchEvent func(*Recorder, *batchRig)

func batches(cms ...*corev1.ConfigMap) batchEvent {
	return func(_ *Recorder, b *batchRig) { b.batches, b.listErr = cms, nil }
}

func notListed() batchEvent {
	return func(_ *Recorder, b *batchRig) {
		b.listErr = errors.New("the scheduler has not read the submit batches yet")
	}
}

func apiHolds(stored bool, err error) batchEvent {
	return func(_ *Recorder, b *batchRig) { b.stored, b.getErr = stored, err }
}

func seen(evs ...event) batchEvent {
	return func(r *Recorder, _ *batchRig) {
		for _, ev := range evs {
			ev(r.st)
		}
	}
}

// A Slurm job waiting in its submit batch is in the ledger as PENDING from its batch;
// once its PodGroup exists it is the same record, with one submit time; one dropped from
// its batches without ever being stored ends CANCELLED, once the API server confirms it
// has no PodGroup.
func TestFlushRecordsBatchedJobs(t *testing.T) {
	a, b := batch("a", heldJob()), batch("b", heldJob()) // b: a retried submission
	running := storedJob(func(pg *v1alpha1.PodGroup) { pg.Status.Phase, pg.Status.StartTime = v1alpha1.PodGroupRunning, mt(15) })
	cancelled := storedJob(func(pg *v1alpha1.PodGroup) { pg.Status.Phase, pg.Status.EndTime = v1alpha1.PodGroupCancelled, mt(30) })
	gone := running.DeepCopy()
	gone.DeletionTimestamp = mt(300)
	tests := []struct {
		name   string
		events []batchEvent
		want   []step // the job's whole history in the ledger
		reason string // the last transition's
		asked  int    // how often the API server was asked whether the PodGroup exists
	}{
		{name: "waits in its batch", events: []batchEvent{batches(a)},
			want: []step{{"PENDING", 0}}},
		{name: "starts: its PodGroup and pods are created, then its batch is removed", events: []batchEvent{
			batches(a),
			seen(groupSeen(running), podSeen(jobPod("job-7-0", corev1.PodRunning, -1, 0))),
			batches(),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 15}}},
		{name: "its batch is removed before its PodGroup reaches the recorder", events: []batchEvent{
			batches(a),
			both(apiHolds(true, nil), batches()),
			seen(groupSeen(running), podSeen(jobPod("job-7-0", corev1.PodRunning, -1, 0))),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 15}}, asked: 1},
		{name: "its pods are seen before its PodGroup", events: []batchEvent{
			batches(a),
			seen(podSeen(jobPod("job-7-0", corev1.PodRunning, -1, 0))),
			seen(groupSeen(running)),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 15}}},
		{name: "cancelled while batched: scancel stores it cancelled", events: []batchEvent{
			batches(a),
			seen(groupSeen(cancelled)),
			batches(),
		}, want: []step{{"PENDING", 0}, {"CANCELLED", 30}}},
		{name: "dropped from its batch unstored", events: []batchEvent{
			batches(a),
			batches(),
		}, want: []step{{"PENDING", 0}, {"CANCELLED", 500}}, reason: unstoredReason, asked: 1},
		{name: "dropped unstored, the API server unreachable at first", events: []batchEvent{
			batches(a),
			both(apiHolds(false, errors.New("connection refused")), batches()),
			apiHolds(false, nil),
		}, want: []step{{"PENDING", 0}, {"CANCELLED", 500}}, reason: unstoredReason, asked: 2},
		{name: "held by two batches, dropped from one", events: []batchEvent{
			batches(a, b),
			batches(b),
		}, want: []step{{"PENDING", 0}}},
		{name: "held by two batches, dropped from both", events: []batchEvent{
			batches(a, b),
			batches(b),
			batches(),
		}, want: []step{{"PENDING", 0}, {"CANCELLED", 500}}, reason: unstoredReason, asked: 1},
		{name: "batches not listed yet: nothing is dropped", events: []batchEvent{
			batches(a),
			notListed(),
		}, want: []step{{"PENDING", 0}}},
		{name: "its PodGroup deleted while its batch still holds it: not taken from the batch again", events: []batchEvent{
			batches(a),
			seen(groupSeen(running)),
			seen(groupGone(gone)),
			seen(),
			batches(),
		}, want: []step{{"PENDING", 0}, {"RUNNING", 15}, {"CANCELLED", 300}}, reason: "workload deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, db := newOfflineRecorder(t, func() time.Time { return at(500) })
			rig := &batchRig{}
			r.ReadSubmitBatches(func() ([]*corev1.ConfigMap, error) { return rig.batches, rig.listErr })
			r.isStored = func(_ context.Context, k client.ObjectKey) (bool, error) {
				rig.asked++
				if k != (client.ObjectKey{Namespace: "slurm-nlp", Name: "job-7"}) {
					t.Errorf("asked for PodGroup %s, want slurm-nlp/job-7", k)
				}
				return rig.stored, rig.getErr
			}
			ctx := context.Background()
			for _, ev := range tt.events {
				ev(r, rig)
				r.readBatches(context.Background())
				if err := r.flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			jobs, err := db.Jobs(ctx, accounting.JobFilter{})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("ledger %+v, %v: want one job", jobs, err)
			}
			j := jobs[0]
			if j.JobID != 7 || j.Name != "train" || j.User != "alice" || j.Account != "nlp" || j.Partition != "h100" || j.PodGroup != "job-7" ||
				!j.Submit.Equal(at(0)) || j.Origin != accounting.OriginSlurm || j.Requested.GPUs != 4 || j.Requested.Nodes != 2 {
				t.Errorf("job %+v: want 7, train by alice in nlp on h100, PodGroup job-7, submitted %s, 4 GPUs on 2 nodes asked", j, at(0))
			}
			hist, err := db.Transitions(ctx, 7)
			if err != nil {
				t.Fatal(err)
			}
			got := historyOf(hist)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || j.State != tt.want[len(tt.want)-1].State {
				t.Errorf("history %v, state %s; want %v", got, j.State, tt.want)
			}
			if last := hist[len(hist)-1]; tt.reason != "" && last.Reason != tt.reason {
				t.Errorf("ended %s for %q, want %q", last.State, last.Reason, tt.reason)
			}
			if rig.asked != tt.asked {
				t.Errorf("asked the API server %d times whether the PodGroup exists, want %d", rig.asked, tt.asked)
			}
			if len(r.st.batched) != len(rig.batches) || len(r.st.unstored) != 0 {
				t.Errorf("%d batched and %d unstored jobs remembered, want %d and none", len(r.st.batched), len(r.st.unstored), len(rig.batches))
			}
		})
	}
}

// both is several changes between two flushes.
func both(evs ...batchEvent) batchEvent {
	return func(r *Recorder, b *batchRig) {
		for _, ev := range evs {
			ev(r, b)
		}
	}
}

// A new leader's first flush records the whole backlog waiting in the batches at once:
// more jobs than SQLite takes parameters in one statement (32,766).
func TestFlushRecordsAWholeBacklog(t *testing.T) {
	r, db := newOfflineRecorder(t, func() time.Time { return at(500) })
	const perBatch, nBatches = 256, 130
	var cms []*corev1.ConfigMap
	for n := range nBatches {
		var pgs []*v1alpha1.PodGroup
		for i := range perBatch {
			pg := heldJob()
			id := fmt.Sprint(n*perBatch + i + 1)
			pg.Name, pg.Labels[v1alpha1.JobIDLabel] = "job-"+id, id
			pgs = append(pgs, pg)
		}
		cms = append(cms, batch(fmt.Sprint(n), pgs...))
	}
	r.ReadSubmitBatches(func() ([]*corev1.ConfigMap, error) { return cms, nil })
	r.readBatches(context.Background())
	if err := r.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	jobs, err := db.Jobs(context.Background(), accounting.JobFilter{States: []accounting.JobState{accounting.StatePending}})
	if err != nil || len(jobs) != perBatch*nBatches {
		t.Errorf("%d jobs PENDING in the ledger (%v), want %d", len(jobs), err, perBatch*nBatches)
	}
}
