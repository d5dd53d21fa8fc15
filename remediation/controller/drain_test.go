package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/remediation/health"
)

func TestMustLeave(t *testing.T) {
	faulty := []health.GPUInfo{{Index: 3, UUID: "GPU-3"}}
	pod := func(mod func(p *corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}, Labels: map[string]string{}}}
		p.Status.Phase = corev1.PodRunning
		mod(p)
		return p
	}
	onGPU := func(v string) func(p *corev1.Pod) {
		return func(p *corev1.Pod) { p.Annotations[v1alpha1.GPUAssignmentAnnotation] = v }
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		wholeNode bool
		gpuLocal  bool
	}{
		{"plain pod", pod(func(*corev1.Pod) {}), true, false},
		{"pod on the faulty GPU", pod(onGPU(`{"gpus":[{"index":3,"uuid":"GPU-3"}]}`)), true, true},
		{"pod sharing the faulty GPU", pod(onGPU(`{"gpus":[{"index":3,"uuid":"GPU-3"}],"portion":0.25}`)), true, true},
		{"pod on another GPU", pod(onGPU(`{"gpus":[{"index":1,"uuid":"GPU-1"}]}`)), true, false},
		{"unreadable assignment is evicted to be safe", pod(onGPU(`{`)), true, true},
		{"finished pod", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false, false},
		{"DaemonSet pod", pod(func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet"}} }), false, false},
		{"static pod", pod(func(p *corev1.Pod) { p.Annotations[corev1.MirrorPodAnnotationKey] = "x" }), false, false},
		{"validation pod", pod(func(p *corev1.Pod) { p.Labels[ValidationLabel] = "n" }), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustLeave(tt.pod, nil); got != tt.wholeNode {
				t.Errorf("whole-node drain: mustLeave = %v, want %v", got, tt.wholeNode)
			}
			if got := mustLeave(tt.pod, faulty); got != tt.gpuLocal {
				t.Errorf("GPU-local drain: mustLeave = %v, want %v", got, tt.gpuLocal)
			}
		})
	}
}
