package v1alpha1

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGroupOfOne(t *testing.T) {
	bare := func(mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
			Labels:      map[string]string{JobIDLabel: "42"},
			Annotations: map[string]string{PodGroupAnnotation: "p", PodGroupDerivedAnnotation: "true"}}}
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
		{"group named by the user", bare(func(p *corev1.Pod) { delete(p.Annotations, PodGroupDerivedAnnotation) }), false},
		{"no job id", bare(func(p *corev1.Pod) { delete(p.Labels, JobIDLabel) }), false},
		{"job id not a number", bare(func(p *corev1.Pod) { p.Labels[JobIDLabel] = "x" }), false},
		{"job id zero", bare(func(p *corev1.Pod) { p.Labels[JobIDLabel] = "0" }), false},
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
		{"sluice labels", map[string]string{QueueLabel: "a", KAIQueueLabel: "b", PartitionLabel: "gpu"}, nil, "a", "gpu"},
		{"KAI queue label, partition from the node selector", map[string]string{KAIQueueLabel: "b"}, map[string]string{PartitionLabel: "cpu"}, "b", "cpu"},
		{"nothing named", nil, nil, DefaultQueue, ""},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns", UID: "pod-uid", CreationTimestamp: created,
			Labels:      map[string]string{JobIDLabel: "7"},
			Annotations: map[string]string{PodGroupAnnotation: "train-g", PodGroupDerivedAnnotation: "true"}},
			Spec: corev1.PodSpec{NodeSelector: tc.nodeSelector, PriorityClassName: "high"}}
		for k, v := range tc.labels {
			pod.Labels[k] = v
		}
		pg := ImpliedPodGroup(pod)
		if pg.Name != "train-g" || pg.Namespace != "ns" || pg.Labels[JobIDLabel] != "7" {
			t.Errorf("%s: names %s/%s job %q, want ns/train-g job 7", tc.name, pg.Namespace, pg.Name, pg.Labels[JobIDLabel])
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

func TestOwningPod(t *testing.T) {
	for _, tc := range []struct {
		name   string
		owners []metav1.OwnerReference
		want   string
	}{
		{"a bare pod's group", []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u"}}, "p"},
		{"a Job's group", []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u"}}, ""},
		{"a Pod kind of another group", []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Pod", Name: "x"}}, ""},
		{"no owner", nil, ""},
	} {
		got := ""
		if o := OwningPod(&PodGroup{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tc.owners}}); o != nil {
			got = o.Name
		}
		if got != tc.want {
			t.Errorf("%s: owning pod %q, want %q", tc.name, got, tc.want)
		}
	}
}
