package bench

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/test/cluster"
)

// The benchmark's pod asks for its one GPU either as nvidia.com/gpu or, with claims,
// through a claim from the namespace's template that its container uses, and is
// otherwise the same pod.
func TestPodAsksForOneGPU(t *testing.T) {
	tests := []struct {
		name                string
		opts                Options
		wantGPU, wantClaims bool
		wantAffinity        bool
	}{
		{"nvidia.com/gpu", Options{}, true, false, false},
		{"claims", Options{Claims: true}, false, true, false},
		{"claims, constrained", Options{Claims: true, Constrained: true}, false, true, true},
		{"nvidia.com/gpu, constrained", Options{Constrained: true}, true, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &harness{opts: tt.opts, sched: &kubeSchedulerProcess{}}
			pod := h.pod("bench-stream-1", "p7", benchQueue)
			if pod.Name != "p7" || pod.Namespace != "bench-stream-1" || pod.Spec.SchedulerName != kubeSchedulerName || pod.Labels[v1alpha1.QueueLabel] != benchQueue {
				t.Errorf("pod %s/%s, scheduler %q, labels %v", pod.Namespace, pod.Name, pod.Spec.SchedulerName, pod.Labels)
			}
			if len(pod.Spec.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
			}
			res := pod.Spec.Containers[0].Resources
			if cpu := res.Requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1")) != 0 {
				t.Errorf("CPU request %s, want 1", cpu.String())
			}
			_, req := res.Requests[v1alpha1.GPUResource]
			_, lim := res.Limits[v1alpha1.GPUResource]
			if req != tt.wantGPU || lim != tt.wantGPU {
				t.Errorf("nvidia.com/gpu request %v, limit %v; want %v", req, lim, tt.wantGPU)
			}
			if gpu := res.Limits[v1alpha1.GPUResource]; tt.wantGPU && gpu.Value() != 1 {
				t.Errorf("nvidia.com/gpu limit %s, want 1", gpu.String())
			}
			if got := pod.Spec.Affinity != nil && len(pod.Spec.Tolerations) == 1; got != tt.wantAffinity {
				t.Errorf("affinity and toleration %v, want %v", got, tt.wantAffinity)
			}
			if !tt.wantClaims {
				if len(pod.Spec.ResourceClaims) != 0 || len(res.Claims) != 0 {
					t.Errorf("claims %v, container's %v; want none", pod.Spec.ResourceClaims, res.Claims)
				}
				return
			}
			pcs := pod.Spec.ResourceClaims
			if len(pcs) != 1 || pcs[0].ResourceClaimTemplateName == nil || *pcs[0].ResourceClaimTemplateName != gpuClaimTemplateName || pcs[0].ResourceClaimName != nil {
				t.Fatalf("pod claims %+v, want one from template %s", pcs, gpuClaimTemplateName)
			}
			if len(res.Claims) != 1 || res.Claims[0].Name != pcs[0].Name {
				t.Errorf("container uses claims %v, want %q", res.Claims, pcs[0].Name)
			}
		})
	}
}

// The template asks for exactly one device of the GPU class, in the pod's namespace.
func TestGPUClaimTemplateAsksForOneGPU(t *testing.T) {
	tmpl := gpuClaimTemplate("bench-stream-1")
	if tmpl.Name != gpuClaimTemplateName || tmpl.Namespace != "bench-stream-1" {
		t.Errorf("template %s/%s", tmpl.Namespace, tmpl.Name)
	}
	reqs := tmpl.Spec.Spec.Devices.Requests
	if len(reqs) != 1 || reqs[0].Exactly == nil {
		t.Fatalf("requests %+v, want one exact request", reqs)
	}
	if e := reqs[0].Exactly; e.DeviceClassName != cluster.DeviceClassGPU || e.AllocationMode != "ExactCount" || e.Count != 1 || len(e.Selectors) != 0 {
		t.Errorf("request %+v, want exactly 1 of %s", e, cluster.DeviceClassGPU)
	}
	if len(tmpl.Spec.Spec.Devices.Constraints) != 0 || len(tmpl.Spec.Spec.Devices.Config) != 0 {
		t.Errorf("constraints %v, config %v; want none", tmpl.Spec.Spec.Devices.Constraints, tmpl.Spec.Spec.Devices.Config)
	}
}
