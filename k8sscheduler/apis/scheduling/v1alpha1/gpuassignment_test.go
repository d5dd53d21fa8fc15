package v1alpha1

import (
	"reflect"
	"testing"
)

// Every assignment the binder writes reads back the same; what no binder writes is refused.
func TestGPUAssignmentRoundTrips(t *testing.T) {
	for _, a := range []GPUAssignment{
		{GPUs: []AssignedGPU{{Index: 0, UUID: "GPU-a"}, {Index: 3, UUID: "GPU-d"}}, Portion: 1},
		{GPUs: []AssignedGPU{{Index: 2}}, Portion: 0.25, GPUMemoryMiB: 20480, MPS: true},
		{GPUs: []AssignedGPU{{Index: 1}}}, // a reservation's slot
	} {
		got, ok, err := GPUAssignmentOf(map[string]string{GPUAssignmentAnnotation: a.Encode()})
		if err != nil || !ok || !reflect.DeepEqual(got, a) {
			t.Errorf("%s read back as %+v (ok %v, %v), want %+v", a.Encode(), got, ok, err, a)
		}
	}
	for _, bad := range []string{`{"gpus":[{"index":0}],"portion":1.5}`, `{"gpus":[{"index":0}],"portion":-1}`, `not json`} {
		if _, err := ParseGPUAssignment(bad); err == nil {
			t.Errorf("%s read without an error", bad)
		}
	}
	if _, ok, err := GPUAssignmentOf(map[string]string{}); ok || err != nil {
		t.Errorf("a pod without the annotation: ok %v, %v; want no assignment and no error", ok, err)
	}
}
