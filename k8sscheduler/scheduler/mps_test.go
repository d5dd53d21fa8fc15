package scheduler

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func TestMPSLimits(t *testing.T) {
	two := []v1alpha1.AssignedGPU{{Index: 0, UUID: "GPU-a"}, {Index: 3, UUID: "GPU-d"}}
	one := two[:1]
	tests := []struct {
		name string
		a    v1alpha1.GPUAssignment
		want map[string]string
	}{
		{name: "not an MPS node: nothing", a: v1alpha1.GPUAssignment{GPUs: one, Portion: 0.25, GPUMemoryMiB: 20480}},
		{name: "whole GPUs: nothing", a: v1alpha1.GPUAssignment{GPUs: one, Portion: 1, GPUMemoryMiB: 81920, MPS: true}},
		{name: "a reservation's empty slot: nothing", a: v1alpha1.GPUAssignment{GPUs: one, MPS: true}},
		{name: "quarter with memory", a: v1alpha1.GPUAssignment{GPUs: one, Portion: 0.25, GPUMemoryMiB: 20480, MPS: true},
			want: map[string]string{v1alpha1.MPSThreadPercentageAnnotation: "25", v1alpha1.MPSMemoryLimitAnnotation: "0=20480M"}},
		{name: "portion rounds up", a: v1alpha1.GPUAssignment{GPUs: one, Portion: 0.333, MPS: true},
			want: map[string]string{v1alpha1.MPSThreadPercentageAnnotation: "34"}},
		{name: "tiny portion is at least 1%", a: v1alpha1.GPUAssignment{GPUs: one, Portion: 0.001, MPS: true},
			want: map[string]string{v1alpha1.MPSThreadPercentageAnnotation: "1"}},
		{name: "two devices: each numbered as the container sees it", a: v1alpha1.GPUAssignment{GPUs: two, Portion: 0.5, GPUMemoryMiB: 40960, MPS: true},
			want: map[string]string{v1alpha1.MPSThreadPercentageAnnotation: "50", v1alpha1.MPSMemoryLimitAnnotation: "0=40960M,1=40960M"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mpsLimits(tt.a)
			if !maps.Equal(got, tt.want) {
				t.Errorf("mpsLimits = %v, want %v", got, tt.want)
			}
			ann := assignmentAnnotations(tt.a)
			for k, v := range tt.want {
				if ann[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, ann[k], v)
				}
			}
			if tt.want == nil {
				for _, k := range []string{v1alpha1.MPSThreadPercentageAnnotation, v1alpha1.MPSMemoryLimitAnnotation} {
					if _, ok := ann[k]; ok {
						t.Errorf("annotation %s set: %v", k, ann)
					}
				}
			}
		})
	}
}

func TestAddMPSEnvKeepsWhatTheJobSets(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "stage"}},
		Containers:     []corev1.Container{{Name: "batch", Env: []corev1.EnvVar{{Name: v1alpha1.MPSThreadPercentageEnv, Value: "10"}}}},
	}}
	addMPSEnv(pod, mpsLimits(v1alpha1.GPUAssignment{GPUs: []v1alpha1.AssignedGPU{{Index: 2}}, Portion: 0.5, GPUMemoryMiB: 1024, MPS: true}))
	env := func(c corev1.Container) map[string]string {
		m := map[string]string{}
		for _, e := range c.Env {
			m[e.Name] = e.Value
		}
		return m
	}
	if got := env(pod.Spec.InitContainers[0]); got[v1alpha1.MPSThreadPercentageEnv] != "50" || got[v1alpha1.MPSMemoryLimitEnv] != "0=1024M" {
		t.Errorf("init container env %v", got)
	}
	if got := env(pod.Spec.Containers[0]); got[v1alpha1.MPSThreadPercentageEnv] != "10" || got[v1alpha1.MPSMemoryLimitEnv] != "0=1024M" {
		t.Errorf("container env %v: its own thread percentage must stay", got)
	}
}
