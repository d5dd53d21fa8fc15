package webhook

import (
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/resvcontroller"
)

var resvT0 = time.Date(2030, 3, 4, 9, 0, 0, 0, time.UTC)

// testResv is a reservation from resvT0+start for an hour, changed by mods.
func testResv(name string, start time.Duration, mods ...func(*v1alpha1.Reservation)) *v1alpha1.Reservation {
	r := &v1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ReservationSpec{StartTime: metav1.NewTime(resvT0.Add(start)), Duration: &metav1.Duration{Duration: time.Hour},
			Accounts: []string{"nlp"}}}
	for _, m := range mods {
		m(r)
	}
	return r
}

func onNodes(nodes ...string) func(*v1alpha1.Reservation) {
	return func(r *v1alpha1.Reservation) { r.Spec.Nodes = nodes }
}

func withFlags(flags ...v1alpha1.ReservationFlag) func(*v1alpha1.Reservation) {
	return func(r *v1alpha1.Reservation) { r.Spec.Flags = flags }
}

func countOf(n int32, partition string) func(*v1alpha1.Reservation) {
	return func(r *v1alpha1.Reservation) { r.Spec.NodeCount, r.Spec.Partition = ptr.To(n), partition }
}

// runningPod is a Sluice pod on node started an hour before resvT0, with a time limit
// (0: none), changed by mods.
func runningPod(name, node string, limit time.Duration, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "vision", Name: name},
		Spec:   corev1.PodSpec{NodeName: node, SchedulerName: "sluice"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: resvT0.Add(-time.Hour)}}}
	if limit > 0 {
		p.Spec.ActiveDeadlineSeconds = ptr.To(int64(limit / time.Second))
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// A Reservation is refused, in Slurm's words, for what scontrol create reservation
// refuses: bad times, unknown partitions and nodes, too large a count, a window meeting
// another's on a shared node, and nodes whose work would outlast its start.
func TestJudgeReservation(t *testing.T) {
	h100 := map[string]string{v1alpha1.PartitionLabel: "h100"}
	nodes := []resvcontroller.Node{{Name: "h1", Labels: h100}, {Name: "h2", Labels: h100}, {Name: "h3", Labels: h100},
		{Name: "a1", Labels: map[string]string{v1alpha1.PartitionLabel: "a100"}}}
	class := testResv("class", 0, onNodes("h1"))
	daily := testResv("standup", 0, onNodes("h3"), withFlags(v1alpha1.ReservationDaily))
	counted := testResv("counted", 0, countOf(1, "h100"), func(r *v1alpha1.Reservation) { r.Status.Nodes = []string{"h2"} })
	ownPod := func(p *corev1.Pod) { p.Labels = map[string]string{v1alpha1.ReservationAnnotation: "new"} }
	tests := []struct {
		name string
		r    *v1alpha1.Reservation
		old  *v1alpha1.Reservation
		pods []*corev1.Pod
		code int32    // 0: admitted
		want []string // parts of the message
	}{
		{name: "free node", r: testResv("new", 0, onNodes("a1"))},
		{name: "ends before it starts", r: testResv("new", 0, onNodes("a1"), func(r *v1alpha1.Reservation) {
			r.Spec.Duration, r.Spec.EndTime = nil, &metav1.Time{Time: resvT0.Add(-time.Minute)}
		}), code: http.StatusUnprocessableEntity, want: []string{slurmInvalidTime}},
		{name: "unknown partition", r: testResv("new", 0, countOf(1, "tpu")), code: http.StatusUnprocessableEntity,
			want: []string{slurmInvalidPartition, `"tpu"`}},
		{name: "unknown node", r: testResv("new", 0, onNodes("a1", "ghost")), code: http.StatusUnprocessableEntity,
			want: []string{slurmInvalidNodeName, "ghost"}},
		{name: "count over the partition", r: testResv("new", 0, countOf(4, "h100")), code: http.StatusUnprocessableEntity,
			want: []string{slurmInvalidNodeCount, "partition h100 has 3 node(s)"}},
		{name: "count without a partition", r: testResv("new", 0, func(r *v1alpha1.Reservation) { r.Spec.NodeCount = ptr.To(int32(1)) }),
			code: http.StatusUnprocessableEntity, want: []string{"needs a partition"}},
		{name: "count of any nodes", r: testResv("new", 0, countOf(1, ""), withFlags(v1alpha1.ReservationAnyNodes))},
		{name: "overlaps on a shared node", r: testResv("new", 30*time.Minute, onNodes("a1", "h1")), code: http.StatusForbidden,
			want: []string{slurmOverlap, "reservation class holds node h1"}},
		{name: "back to back is fine", r: testResv("new", time.Hour, onNodes("h1"))},
		{name: "another node is fine", r: testResv("new", 0, onNodes("a1"))},
		{name: "a daily window repeats into a later one", r: testResv("new", 48*time.Hour+30*time.Minute, onNodes("h3")),
			code: http.StatusForbidden, want: []string{"reservation standup holds node h3", "repeating every 24h0m0s"}},
		{name: "a daily window misses an off-hour one", r: testResv("new", 50*time.Hour, onNodes("h3"))},
		{name: "a count's chosen nodes overlap", r: testResv("new", 0, onNodes("h2")), code: http.StatusForbidden,
			want: []string{"reservation counted holds node h2"}},
		{name: "MAINT may overlap, as in Slurm", r: testResv("new", 0, onNodes("h1"), withFlags(v1alpha1.ReservationMaint))},
		{name: "a count with every node held", r: testResv("new", 0, countOf(1, "h100")), code: http.StatusForbidden,
			want: []string{slurmOverlap, "has 0 node(s) that take work and no other reservation holds"}},
		{name: "a count later, when the others have ended", r: testResv("new", 2*time.Hour, countOf(3, "h100"))},
		{name: "PART_NODES overlaps", r: testResv("new", 0, func(r *v1alpha1.Reservation) {
			r.Spec.Partition, r.Spec.Flags = "h100", []v1alpha1.ReservationFlag{v1alpha1.ReservationPartNodes}
		}), code: http.StatusForbidden, want: []string{slurmOverlap}},
		{name: "an edit that keeps its own window", r: testResv("class", 0, onNodes("h1"), func(r *v1alpha1.Reservation) {
			r.Spec.Accounts = []string{"vision"}
		}), old: class},
		{name: "work without a time limit", r: testResv("new", 0, onNodes("a1")), pods: []*corev1.Pod{runningPod("train", "a1", 0)},
			code: http.StatusForbidden, want: []string{slurmNodesBusy, "pod vision/train on node a1 has no time limit", "IGNORE_JOBS"}},
		{name: "work ending after the start", r: testResv("new", 0, onNodes("a1")), pods: []*corev1.Pod{runningPod("train", "a1", 2*time.Hour)},
			code: http.StatusForbidden, want: []string{slurmNodesBusy, "may run until 2030-03-04T10:00:00Z"}},
		{name: "work ending by the start", r: testResv("new", 0, onNodes("a1")), pods: []*corev1.Pod{runningPod("train", "a1", time.Hour)}},
		{name: "IGNORE_JOBS", r: testResv("new", 0, onNodes("a1"), withFlags(v1alpha1.ReservationIgnoreJobs)),
			pods: []*corev1.Pod{runningPod("train", "a1", 0)}},
		{name: "DaemonSet, static and validation pods stay", r: testResv("new", 0, onNodes("a1")), pods: []*corev1.Pod{
			runningPod("ds", "a1", 0, func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "dcgm", Controller: ptr.To(true)}}
			}),
			runningPod("static", "a1", 0, func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }),
			runningPod("validate", "a1", 0, func(p *corev1.Pod) { p.Labels = map[string]string{v1alpha1.ValidationLabel: "a1"} }),
			runningPod("other", "a1", 0, func(p *corev1.Pod) { p.Spec.SchedulerName = "default-scheduler" }),
		}},
		{name: "its own jobs do not make it busy", r: testResv("new", 0, onNodes("a1")), pods: []*corev1.Pod{runningPod("mine", "a1", 0, ownPod)}},
		{name: "a pod being deleted ends with its grace period", r: testResv("new", 0, onNodes("a1")), pods: []*corev1.Pod{
			runningPod("leaving", "a1", 0, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: resvT0.Add(-time.Minute)} })}},
		{name: "a count whose free nodes are busy", r: testResv("new", 2*time.Hour, countOf(3, "h100")),
			pods: []*corev1.Pod{runningPod("train", "h2", 0)}, code: http.StatusForbidden, want: []string{slurmNodesBusy, "only 2 node(s)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &reservationWorld{now: resvT0.Add(-10 * time.Minute), nodes: nodes, parts: map[string]*v1alpha1.Partition{},
				others: []*v1alpha1.Reservation{class, daily, counted}, pods: tt.pods,
				groupOf: func(*corev1.Pod) *v1alpha1.PodGroup { return nil }}
			got := judgeReservation(tt.r, tt.old, w, []string{"sluice"})
			if tt.code == 0 {
				if got != nil {
					t.Fatalf("refused (%d): %s", got.code, got.why)
				}
				return
			}
			if got == nil || got.code != tt.code {
				t.Fatalf("got %+v, want a %d refusal", got, tt.code)
			}
			for _, part := range tt.want {
				if !strings.Contains(got.why, part) {
					t.Errorf("message %q does not say %q", got.why, part)
				}
			}
		})
	}
}
