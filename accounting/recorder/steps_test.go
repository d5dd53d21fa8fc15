package recorder

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/store"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// TestStepReportIsRecordedOnce: the batch host's termination message (as
// the kubelet copies it into the pod status) becomes the job's steps in
// the ledger, written once; other pods' messages, a requeued run's old
// batch host and a look-alike without Sluice's labels are not read.
func TestStepReportIsRecordedOnce(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	report := accounting.EncodeSteps([]accounting.Step{
		{StepID: "batch", Name: "batch", State: accounting.StateCompleted, Start: t0, End: t0.Add(time.Minute), Tasks: 1},
		{StepID: "0", Name: "python", State: accounting.StateFailed, ExitCode: 2, Start: t0, End: t0.Add(time.Minute), Tasks: 2},
	})
	other := accounting.EncodeSteps([]accounting.Step{{StepID: "batch", State: accounting.StateCancelled}})
	// pod is a job pod as the factory makes it; labels nil is a look-alike a
	// tenant created under that name, without the labels only Sluice writes.
	pod := func(name, msg string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "job", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: msg}}}}}}
	}
	host := func(job, index string) map[string]string {
		return map[string]string{v1alpha1.JobIDLabel: job, v1alpha1.NodeIndexLabel: index}
	}
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-9"}, Spec: v1alpha1.PodGroupSpec{Slurm: &v1alpha1.SlurmJob{}}}
	pg.Status.Requeues = 1
	forged := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "job-10"}, Spec: v1alpha1.PodGroupSpec{Slurm: &v1alpha1.SlurmJob{}}}
	work := []groupWork{{key: "ns/job-9", id: 9, pg: pg, pods: []*corev1.Pod{
		pod("job-9-0", other, host("9", "0")), // the first run's
		pod("job-9-r1-1", other, host("9", "1")),
		pod("job-9-r1-0", report, host("9", "0")),
	}}, {key: "ns/job-10", id: 10, pg: forged, pods: []*corev1.Pod{
		pod("job-10-0", report, nil),
	}}}
	var l stepLog
	if err := l.record(ctx, db, work); err != nil {
		t.Fatal(err)
	}
	got, err := db.Steps(ctx, []int64{9})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].StepID != "batch" || got[0].State != accounting.StateCompleted || got[1].ExitCode != 2 {
		t.Fatalf("ledger steps %+v", got)
	}
	if forgedSteps, err := db.Steps(ctx, []int64{10}); err != nil || len(forgedSteps) != 0 {
		t.Errorf("a look-alike batch host's report was recorded: %+v %v", forgedSteps, err)
	}
	// The same report again writes nothing: a closed ledger would fail.
	db.Close()
	if err := l.record(ctx, db, work); err != nil {
		t.Errorf("the same report was written again: %v", err)
	}
}
