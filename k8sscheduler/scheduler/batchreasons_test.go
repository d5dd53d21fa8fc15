package scheduler

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// batchOf makes a scheduler whose cache holds batch name with the jobs ids (held ones
// held), and whose batch informer has the batch with annotation value (none when "").
func batchOf(t *testing.T, name, value string, held map[string]bool, ids ...string) *Scheduler {
	t.Helper()
	s := &Scheduler{cfg: Config{PendingStatusDelay: time.Second, SubmitBatchNamespace: "sluice-system"}.withDefaults(), cache: newCache(),
		batchInf: toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.ConfigMap{}, 0, toolscache.Indexers{})}
	addBatch(t, s, name, value, held, ids...)
	return s
}

// addBatch adds batch name to s's cache and informer.
func addBatch(t *testing.T, s *Scheduler, name, value string, held map[string]bool, ids ...string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{v1alpha1.SubmitBatchLabel: "true"}}}
	if value != "" {
		cm.Annotations = map[string]string{v1alpha1.PendingReasonsAnnotation: value}
	}
	var jobs []*v1alpha1.PodGroup
	for _, id := range ids {
		jobs = append(jobs, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "slurm-nlp", Name: "job-" + id,
			Labels: map[string]string{v1alpha1.JobIDLabel: id}},
			Spec: v1alpha1.PodGroupSpec{MinMember: 1, Slurm: &v1alpha1.SlurmJob{User: "alice", Hold: held[id]}}})
	}
	s.cache.setBatch(name, jobs)
	if err := s.batchInf.GetStore().Add(cm); err != nil {
		t.Fatal(err)
	}
}

// cycleReasons runs the status pass of one cycle in which the jobs of pending wait (the
// others do not) and returns the batch writes it makes.
func cycleReasons(t *testing.T, s *Scheduler, pending map[string]bridge.Pending, now time.Time) int {
	t.Helper()
	for _, g := range s.cache.groups {
		p, waits := pending[g.pg.Labels[v1alpha1.JobIDLabel]]
		if s.groupStatusLocked(g, p, waits, now) != nil {
			t.Fatalf("a PodGroup status write for batched job %s", g.key)
		}
	}
	return len(s.batchReasonsLocked(now))
}

// A batch is told why its jobs wait once they have waited the delay, again only when a
// reason changes, not sooner than its period after its last write, and never for a job
// that stops waiting or is held.
func TestBatchReasonsWrittenOnlyOnChange(t *testing.T) {
	s := batchOf(t, "submit-batch-41", "", map[string]bool{"43": true}, "41", "42", "43")
	res := bridge.Pending{Code: bridge.ReasonResources, Reason: "needs 1 GPU in partition h100; no node has that free now"}
	prio := bridge.Pending{Code: bridge.ReasonPriority, Reason: "capacity went to higher-ranked work"}
	held := bridge.Pending{Code: ReasonJobHeld, Reason: "the job is held"}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		name    string
		at      time.Duration
		pending map[string]bridge.Pending
		writes  int
		want    map[string]string // job id -> reason the last write says
	}{
		{name: "just pending: nothing yet", at: 0, pending: map[string]bridge.Pending{"41": res, "42": res, "43": held}},
		{name: "within the delay", at: 500 * time.Millisecond, pending: map[string]bridge.Pending{"41": res, "42": res, "43": held}},
		{name: "past the delay: one write for the batch, the held job left out", at: 1500 * time.Millisecond,
			pending: map[string]bridge.Pending{"41": res, "42": res, "43": held}, writes: 1,
			want: map[string]string{"41": "Resources", "42": "Resources"}},
		{name: "same reasons: no write", at: 2 * time.Second, pending: map[string]bridge.Pending{"41": res, "42": res, "43": held},
			want: map[string]string{"41": "Resources", "42": "Resources"}},
		{name: "a reason changes within the period: held back", at: 3 * time.Second, pending: map[string]bridge.Pending{"41": res, "42": prio, "43": held},
			want: map[string]string{"41": "Resources", "42": "Resources"}},
		{name: "the period is over: written", at: 12 * time.Second, pending: map[string]bridge.Pending{"41": res, "42": prio, "43": held}, writes: 1,
			want: map[string]string{"41": "Resources", "42": "Priority"}},
		{name: "a job stops waiting (it starts): no write", at: 30 * time.Second, pending: map[string]bridge.Pending{"42": prio, "43": held},
			want: map[string]string{"41": "Resources", "42": "Priority"}},
		{name: "it waits again: the delay first", at: 32 * time.Second, pending: map[string]bridge.Pending{"41": res, "42": prio, "43": held},
			want: map[string]string{"41": "Resources", "42": "Priority"}},
		{name: "past the delay, for the reason written: no write", at: 34 * time.Second, pending: map[string]bridge.Pending{"41": res, "42": prio, "43": held},
			want: map[string]string{"41": "Resources", "42": "Priority"}},
	}
	for _, st := range steps {
		if got := cycleReasons(t, s, st.pending, t0.Add(st.at)); got != st.writes {
			t.Fatalf("%s: %d writes, want %d", st.name, got, st.writes)
		}
		written, err := v1alpha1.ParsePendingReasons(s.batchBook.written["submit-batch-41"])
		if err != nil {
			t.Fatal(err)
		}
		if len(written) != len(st.want) {
			t.Fatalf("%s: the batch says %v, want %v", st.name, written, st.want)
		}
		for id, reason := range st.want {
			if written[id].Reason != reason {
				t.Errorf("%s: job %s reads %q, want %q", st.name, id, written[id].Reason, reason)
			}
		}
	}
}

// Nothing is written where the batch already says it (a former leader wrote it) or where
// the batch is gone.
func TestBatchReasonsNotWrittenAgain(t *testing.T) {
	res := bridge.Pending{Code: bridge.ReasonResources, Reason: "needs 1 GPU in partition h100; no node has that free now"}
	said := v1alpha1.FormatPendingReasons(map[string]v1alpha1.BatchedWait{"41": {Reason: "Resources", Message: res.Reason}})
	for _, tc := range []struct {
		name   string
		value  string // on the batch
		gone   bool   // the informer has no batch any more
		writes int
	}{
		{name: "a new leader finds the same reasons", value: said},
		{name: "a new leader finds other reasons", value: `[{"reason":"Priority","jobs":[41]}]`, writes: 1},
		{name: "the batch is gone", gone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := batchOf(t, "submit-batch-41", tc.value, nil, "41")
			if tc.gone {
				s.batchInf = toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
			}
			t0 := time.Unix(1000, 0)
			writes := cycleReasons(t, s, map[string]bridge.Pending{"41": res}, t0)
			writes += cycleReasons(t, s, map[string]bridge.Pending{"41": res}, t0.Add(2*time.Second))
			if writes != tc.writes {
				t.Errorf("%d writes, want %d", writes, tc.writes)
			}
		})
	}
}

// Many batches told at once are written at most batchReasonsBurst at a time, the rest at
// batchReasonsRate a second, none lost.
func TestBatchReasonsPacedAcrossBatches(t *testing.T) {
	s := batchOf(t, "submit-batch-1", "", nil, "1")
	pending := map[string]bridge.Pending{"1": {Code: bridge.ReasonResources}}
	for i := 2; i <= batchReasonsBurst+10; i++ {
		id := fmt.Sprint(i)
		addBatch(t, s, "submit-batch-"+id, "", nil, id)
		pending[id] = bridge.Pending{Code: bridge.ReasonResources}
	}
	t0 := time.Unix(1000, 0)
	for _, st := range []struct {
		at     time.Duration
		writes int
	}{
		{at: 0},
		{at: 2 * time.Second, writes: batchReasonsBurst},
		{at: 2500 * time.Millisecond, writes: batchReasonsRate / 2},
		{at: 3500 * time.Millisecond, writes: 10 - batchReasonsRate/2},
		{at: 5 * time.Second},
	} {
		if got := cycleReasons(t, s, pending, t0.Add(st.at)); got != st.writes {
			t.Errorf("cycle at %v: %d writes, want %d", st.at, got, st.writes)
		}
	}
}
