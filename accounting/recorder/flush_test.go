package recorder

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/store"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// newOfflineRecorder is a recorder whose informer handlers the test calls itself,
// writing to a real SQLite ledger.
func newOfflineRecorder(t *testing.T, clock func() time.Time) (*Recorder, accounting.Store) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r, err := New(Config{Store: db, RESTConfig: &rest.Config{Host: "http://unused"}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return r, db
}

// A manifest Job's pod is seen before the pod grouper made its group; once the group
// appears the pod is found through its owner. Deleting the running workload closes it
// as CANCELLED at the deletion, and pods of other schedulers are not Sluice's.
func TestFlushLinksPodsByOwnerAndClosesDeletedGroups(t *testing.T) {
	r, db := newOfflineRecorder(t, func() time.Time { return at(500) })
	ctx := context.Background()
	p := pod("train-x1", "n1", 5, corev1.PodRunning, -1, 0, map[string]string{})
	p.Namespace, p.OwnerReferences = "team", []metav1.OwnerReference{{Kind: "Job", Name: "train", UID: "job-uid"}}
	other := p.DeepCopy()
	other.Name, other.Spec.SchedulerName = "train-x2", "default-scheduler"
	r.st.setPod(p)
	r.st.setPod(other)
	if err := r.flush(ctx); err != nil {
		t.Fatal(err)
	}
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train-1a2b", Namespace: "team", UID: "pg-uid",
		CreationTimestamp: metav1.NewTime(at(0)), OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "train", UID: "job-uid"}}},
		Spec: v1alpha1.PodGroupSpec{MinMember: 1, Queue: "vision"}}
	r.st.setGroup(pg)
	if err := r.flush(ctx); err != nil {
		t.Fatal(err)
	}
	id := JobID(pg)
	jobs, err := db.Jobs(ctx, accounting.JobFilter{JobIDs: []int64{id}})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs %v, %v", jobs, err)
	}
	if j := jobs[0]; j.State != accounting.StateRunning || j.Allocated.GPUs != 2 || j.Name != "train" || !j.Start.Equal(at(5)) {
		t.Errorf("running workload %+v: want train RUNNING on 2 GPUs since %s (the other scheduler's pod not counted)", j, at(5))
	}

	gone := pg.DeepCopy()
	gone.DeletionTimestamp = mt(300)
	r.st.deleteGroup(gone)
	if err := r.flush(ctx); err != nil {
		t.Fatal(err)
	}
	jobs, _ = db.Jobs(ctx, accounting.JobFilter{JobIDs: []int64{id}})
	if j := jobs[0]; j.State != accounting.StateCancelled || !j.End.Equal(at(300)) {
		t.Errorf("deleted workload %+v: want CANCELLED at %s", j, at(300))
	}
	if len(r.st.deleted) != 0 || len(r.st.known) != 0 {
		t.Errorf("a closed group is still remembered: %d deleted, %d known", len(r.st.deleted), len(r.st.known))
	}
}

// A group whose record the ledger refuses (no queue) is reported and skipped; the
// others in the same flush are written.
func TestFlushSkipsWhatCannotBeRecorded(t *testing.T) {
	r, db := newOfflineRecorder(t, func() time.Time { return at(500) })
	bad := slurmGroup("11", func(pg *v1alpha1.PodGroup) { pg.Spec.Queue = "" })
	r.st.setGroup(bad)
	r.st.setGroup(slurmGroup("12", nil))
	if err := r.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	jobs, err := db.Jobs(context.Background(), accounting.JobFilter{})
	if err != nil || len(jobs) != 1 || jobs[0].JobID != 12 {
		t.Errorf("ledger %+v, %v: want job 12 alone", jobs, err)
	}
}

// Two requeues between two flushes (the group's count rose by two, its last requeue time
// names only the second) are two REQUEUED in the ledger, and a third requeue seen on its
// own makes three: the ledger counts every restart, as sacct does.
func TestFlushRecordsEveryRequeueBetweenFlushes(t *testing.T) {
	r, db := newOfflineRecorder(t, func() time.Time { return at(500) })
	ctx := context.Background()
	pg := slurmGroup("21", func(pg *v1alpha1.PodGroup) { pg.Status.Phase = v1alpha1.PodGroupRunning })
	count := func() int {
		t.Helper()
		if err := r.flush(ctx); err != nil {
			t.Fatal(err)
		}
		jobs, err := db.Jobs(ctx, accounting.JobFilter{JobIDs: []int64{21}})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("jobs %v, %v", jobs, err)
		}
		return jobs[0].RequeueCount
	}
	r.st.setGroup(pg)
	if n := count(); n != 0 {
		t.Fatalf("running job: %d requeues, want 0", n)
	}
	for _, step := range []struct{ requeues, at, want int }{{2, 60, 2}, {2, 60, 2}, {3, 90, 3}} {
		pg = pg.DeepCopy()
		pg.Status.Phase, pg.Status.Requeues, pg.Status.LastRequeueTime = v1alpha1.PodGroupPending, int32(step.requeues), mt(step.at)
		r.st.setGroup(pg)
		if n := count(); n != step.want {
			t.Errorf("count %d (last at %d): ledger has %d requeues, want %d", step.requeues, step.at, n, step.want)
		}
	}
}
