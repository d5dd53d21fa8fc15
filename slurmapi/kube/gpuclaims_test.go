package kube

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

// On a partition whose GPUs come through DRA, a job's pods ask no nvidia.com/gpu of a
// device plugin: each claims its GPUs through a ResourceClaim named after it, of the
// partition's DeviceClass, for the same count; elsewhere nothing changes.
func TestBuildPodsClaimGPUsOnADRAPartition(t *testing.T) {
	d := &slurmapi.JobDesc{Name: "train", User: "alice", Account: "nlp", Partition: "h100", Script: "#!/bin/bash\ntrue\n",
		Nodes: 2, Tasks: 2, GPUs: slurmapi.GPURequest{PerNode: 8}, TimeLimit: time.Minute}
	pg := PodGroupFor(d, 7)
	for _, tt := range []struct {
		class string
		claim bool
	}{{"gpu.nvidia.com", true}, {"", false}} {
		pods, err := BuildPods(pg, eightGPUBinds(2), RunAs{LauncherImage: testLauncherImage, Image: "pytorch:25", GPUDeviceClass: tt.class})
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range pods {
			c := pod.Spec.Containers[0]
			_, asks := c.Resources.Requests[v1alpha1.GPUResource]
			_, limits := c.Resources.Limits[v1alpha1.GPUResource]
			if asks == tt.claim || limits == tt.claim {
				t.Errorf("class %q: pod %s asks nvidia.com/gpu %v (limit %v), want %v", tt.class, pod.Name, asks, limits, !tt.claim)
			}
			if !tt.claim {
				if len(pod.Spec.ResourceClaims) != 0 {
					t.Errorf("pod %s on a device-plugin partition claims %+v", pod.Name, pod.Spec.ResourceClaims)
				}
				continue
			}
			rc := pod.Spec.ResourceClaims
			if len(rc) != 1 || rc[0].ResourceClaimName == nil || *rc[0].ResourceClaimName != GPUClaim(pod.Name) ||
				len(c.Resources.Claims) != 1 || c.Resources.Claims[0].Name != rc[0].Name {
				t.Errorf("pod %s claims %+v (container %+v), want its own claim %s used by its container", pod.Name, rc, c.Resources.Claims, GPUClaim(pod.Name))
			}
			if pod.Annotations[gpuClaimCountAnnotation] != "8" || pod.Annotations[gpuClaimClassAnnotation] != tt.class {
				t.Errorf("pod %s: claim of %q GPUs of %q, want 8 of %s", pod.Name, pod.Annotations[gpuClaimCountAnnotation], pod.Annotations[gpuClaimClassAnnotation], tt.class)
			}
		}
	}
}
