package scheduler

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// A pod's resource claims become what the core counts: the GPUs of a GPU class, exactly
// counted, and the constraint that it goes where the claims could be met; a pod whose
// claim does not exist yet, or that asks in a way the core cannot count, waits and says
// why.
func TestPodResourceClaimsBecomeItsAsk(t *testing.T) {
	gpuClaim := func(name string, mode resourceapi.DeviceAllocationMode, count int64, class string) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 1},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: mode, Count: count}}}}}}
	}
	tests := []struct {
		name      string
		claims    []*resourceapi.ResourceClaim
		pod       func(*corev1.Pod)
		wantGPUs  int64
		wantBad   string // a part of why it waits; "" for none
		wantCount bool   // the constraints carry the claims
	}{
		{name: "two GPUs of the GPU class", claims: []*resourceapi.ResourceClaim{gpuClaim("c", resourceapi.DeviceAllocationModeExactCount, 2, "gpu.nvidia.com")},
			wantGPUs: 2, wantCount: true},
		{name: "a MIG partition is not a whole GPU", claims: []*resourceapi.ResourceClaim{gpuClaim("c", resourceapi.DeviceAllocationModeExactCount, 1, "mig.nvidia.com")},
			wantGPUs: 0, wantCount: true},
		{name: "the claim does not exist", wantBad: "waiting for ResourceClaim ns/c, which does not exist"},
		{name: "all devices of a GPU class", claims: []*resourceapi.ResourceClaim{gpuClaim("c", resourceapi.DeviceAllocationModeAll, 0, "gpu.nvidia.com")},
			wantBad: "asks for all devices of GPU class gpu.nvidia.com; ask an exact count"},
		{name: "GPUs both ways", claims: []*resourceapi.ResourceClaim{gpuClaim("c", resourceapi.DeviceAllocationModeExactCount, 1, "gpu.nvidia.com")},
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")}
			},
			wantBad: "both through nvidia.com/gpu"},
		{name: "a template's claim not made yet", pod: func(p *corev1.Pod) {
			tmpl := "one-gpu"
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
		}, wantBad: `waiting for its resource claim "gpu" to be made from ResourceClaimTemplate one-gpu`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache()
			for _, cl := range tt.claims {
				c.dra.claims["ns/"+cl.Name] = cl
			}
			name := "c"
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
				Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName,
					ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}},
					Containers:     []corev1.Container{{Name: "main"}}},
			}
			if tt.pod != nil {
				tt.pod(pod)
			}
			slim := slimPod(pod, v1alpha1.DefaultSchedulerName)
			e := convertPod(slim, v1alpha1.DefaultSchedulerName)
			c.fillDRA(e, slim)
			if tt.wantBad != "" {
				if !strings.Contains(e.bad, tt.wantBad) {
					t.Fatalf("bad = %q, want it to say %q", e.bad, tt.wantBad)
				}
				return
			}
			if e.bad != "" {
				t.Fatalf("bad = %q, want none", e.bad)
			}
			if got := e.request.GPUMilli / 1000; got != tt.wantGPUs {
				t.Errorf("the core counts %d GPUs, want %d", got, tt.wantGPUs)
			}
			if got := e.gpu.Devices; tt.wantGPUs > 0 && int64(got) != tt.wantGPUs {
				t.Errorf("GPU request of %d devices, want %d", got, tt.wantGPUs)
			}
			if (e.cons.dra != nil) != tt.wantCount || !strings.Contains(e.cons.text, "ResourceClaim c") {
				t.Errorf("constraints %q (claims %v), want them to name the claim", e.cons.text, e.cons.dra != nil)
			}
			if len(e.draClaims) != 1 || e.draClaims[0] != "ns/c" {
				t.Errorf("claims to allocate at the bind = %v, want [ns/c]", e.draClaims)
			}
		})
	}
}
