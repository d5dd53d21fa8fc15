package jobstate

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func TestGroupOfOne(t *testing.T) {
	bare := func(mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
			Labels:      map[string]string{v1alpha1.JobIDLabel: "42"},
			Annotations: map[string]string{v1alpha1.PodGroupAnnotation: "p", v1alpha1.PodGroupDerivedAnnotation: "true"}}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"named and numbered bare pod", bare(nil), true},
		{"owned by a Job", bare(func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u"}}
		}), false},
		{"group named by the user", bare(func(p *corev1.Pod) { delete(p.Annotations, v1alpha1.PodGroupDerivedAnnotation) }), false},
		{"no job id", bare(func(p *corev1.Pod) { delete(p.Labels, v1alpha1.JobIDLabel) }), false},
		{"job id not a number", bare(func(p *corev1.Pod) { p.Labels[v1alpha1.JobIDLabel] = "x" }), false},
		{"job id zero", bare(func(p *corev1.Pod) { p.Labels[v1alpha1.JobIDLabel] = "0" }), false},
	} {
		if got := GroupOfOne(tc.pod); got != tc.want {
			t.Errorf("%s: GroupOfOne = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestImpliedPodGroup(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 12, 3, 8, 0, 0, 123456789, time.UTC))
	for _, tc := range []struct {
		name                 string
		labels, nodeSelector map[string]string
		wantQueue, wantPart  string
	}{
		{"sluice labels", map[string]string{v1alpha1.QueueLabel: "a", v1alpha1.KAIQueueLabel: "b", v1alpha1.PartitionLabel: "gpu"}, nil, "a", "gpu"},
		{"KAI queue label, partition from the node selector", map[string]string{v1alpha1.KAIQueueLabel: "b"}, map[string]string{v1alpha1.PartitionLabel: "cpu"}, "b", "cpu"},
		{"nothing named", nil, nil, v1alpha1.DefaultQueue, ""},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns", UID: "pod-uid", CreationTimestamp: created,
			Labels:      map[string]string{v1alpha1.JobIDLabel: "7"},
			Annotations: map[string]string{v1alpha1.PodGroupAnnotation: "train-g", v1alpha1.PodGroupDerivedAnnotation: "true"}},
			Spec: corev1.PodSpec{NodeSelector: tc.nodeSelector, PriorityClassName: "high"}}
		for k, v := range tc.labels {
			pod.Labels[k] = v
		}
		pg := ImpliedPodGroup(pod)
		if pg.Name != "train-g" || pg.Namespace != "ns" || pg.Labels[v1alpha1.JobIDLabel] != "7" {
			t.Errorf("%s: names %s/%s job %q, want ns/train-g job 7", tc.name, pg.Namespace, pg.Name, pg.Labels[v1alpha1.JobIDLabel])
		}
		if pg.Spec.Queue != tc.wantQueue || pg.Spec.Partition != tc.wantPart || pg.Spec.MinMember != 1 || pg.Spec.PriorityClassName != "high" {
			t.Errorf("%s: spec %+v, want queue %q partition %q minMember 1 priority class high", tc.name, pg.Spec, tc.wantQueue, tc.wantPart)
		}
		if !pg.SubmitTime().Equal(created.Time) {
			t.Errorf("%s: submitted %v, want the pod's creation %v", tc.name, pg.SubmitTime(), created.Time)
		}
		if len(pg.OwnerReferences) != 1 || pg.OwnerReferences[0].Kind != "Pod" || pg.OwnerReferences[0].UID != "pod-uid" {
			t.Errorf("%s: owners %+v, want the pod", tc.name, pg.OwnerReferences)
		}
	}
}
