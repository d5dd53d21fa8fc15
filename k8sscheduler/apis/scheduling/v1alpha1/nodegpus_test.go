package v1alpha1

import (
	"reflect"
	"testing"
)

// A node's inventory reads back as it was written; a value that is not one is an error
// naming the annotation, and an empty value is no GPUs.
func TestNodeGPUsRoundTrip(t *testing.T) {
	in := []NodeGPU{{Index: 0, UUID: "GPU-a", Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, Healthy: true}, {Index: 7, UUID: "GPU-h"}}
	out, err := ParseNodeGPUs(FormatNodeGPUs(in))
	if err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip = %+v, %v; want %+v", out, err, in)
	}
	if gpus, err := ParseNodeGPUs(""); err != nil || len(gpus) != 0 {
		t.Errorf("empty value = %v, %v; want no GPUs", gpus, err)
	}
	if _, err := ParseNodeGPUs(`{"index":0}`); err == nil {
		t.Error("an object instead of an array was read")
	}
}
