package v1alpha1

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// A node's GPU count is its allocatable nvidia.com/gpu; a node whose GPUs come through
// DRA has none allocatable, and its GPU Operator label counts them.
func TestNodeGPUCount(t *testing.T) {
	gpus := func(n string) corev1.ResourceList {
		return corev1.ResourceList{GPUResource: resource.MustParse(n)}
	}
	for _, tt := range []struct {
		name        string
		allocatable corev1.ResourceList
		capacity    corev1.ResourceList
		label       string
		want        int64
	}{
		{"device plugin", gpus("8"), nil, "8", 8},
		{"allocatable wins over the label", gpus("7"), nil, "8", 7},
		{"no status yet: capacity", nil, gpus("4"), "", 4},
		{"DRA: the label", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}, nil, "4", 4},
		{"no GPUs", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}, nil, "", 0},
		{"a bad label", nil, nil, "four", 0},
	} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}},
			Status: corev1.NodeStatus{Allocatable: tt.allocatable, Capacity: tt.capacity}}
		if tt.label != "" {
			n.Labels[GPUCountLabel] = tt.label
		}
		if got := NodeGPUCount(n); got != tt.want {
			t.Errorf("%s: %d GPUs, want %d", tt.name, got, tt.want)
		}
	}
}
