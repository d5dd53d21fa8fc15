package cluster

import (
	"encoding/json"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNodesFromSpec(t *testing.T) {
	spec := Spec{NodePools: []NodePool{
		{Name: "h100", Count: 2, GPUsPerNode: 8, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "128", Memory: "1Ti", MIGMode: "mixed", Labels: map[string]string{"zone": "a", "type": "gpu"}},
		{Name: "cpu", Count: 1, CPU: "8", Memory: "32Gi"},
	}}
	nodes, err := spec.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	if len(nodes) != 3 || byName["h100-0"] == nil || byName["h100-1"] == nil || byName["cpu-0"] == nil {
		t.Fatalf("nodes = %v, want h100-0, h100-1, cpu-0", names(nodes))
	}

	tests := []struct {
		node, label, want string
	}{
		{"h100-1", LabelGPUProduct, "H100-80GB"},
		{"h100-1", LabelGPUMemory, "81920"},
		{"h100-1", LabelGPUCount, "8"},
		{"h100-1", LabelMIGStrategy, "mixed"},
		{"h100-1", LabelPartition, "h100"},
		{"h100-1", "kubernetes.io/hostname", "h100-1"},
		{"h100-1", "zone", "a"},
		{"h100-1", "type", "gpu"}, // pool labels override the defaults
		{"cpu-0", LabelPartition, "cpu"},
		{"cpu-0", LabelGPUCount, ""},
		{"cpu-0", "type", "kwok"},
	}
	for _, tt := range tests {
		if got := byName[tt.node].Labels[tt.label]; got != tt.want {
			t.Errorf("%s label %s = %q, want %q", tt.node, tt.label, got, tt.want)
		}
	}

	gpuNode := byName["h100-1"]
	if gpuNode.Annotations[annotationKwokNode] != kwokNodeValue || byName["cpu-0"].Annotations[annotationKwokNode] != kwokNodeValue {
		t.Errorf("every node must be annotated %s=%s for kwok to manage it", annotationKwokNode, kwokNodeValue)
	}
	alloc := gpuNode.Status.Allocatable
	if q := alloc[ResourceGPU]; q.Value() != 8 {
		t.Errorf("allocatable %s = %s, want 8", ResourceGPU, q.String())
	}
	if q := alloc[corev1.ResourceCPU]; q.Value() != 128 {
		t.Errorf("allocatable cpu = %s, want 128", q.String())
	}
	if _, ok := byName["cpu-0"].Status.Allocatable[ResourceGPU]; ok {
		t.Errorf("a pool without GPUs must not advertise %s", ResourceGPU)
	}
	if _, ok := byName["cpu-0"].Annotations[AnnotationGPUs]; ok {
		t.Errorf("a pool without GPUs must not carry %s", AnnotationGPUs)
	}

	var gpus []GPUInfo
	if err := json.Unmarshal([]byte(gpuNode.Annotations[AnnotationGPUs]), &gpus); err != nil {
		t.Fatalf("%s annotation: %v", AnnotationGPUs, err)
	}
	if len(gpus) != 8 {
		t.Fatalf("%d GPUs in annotation, want 8", len(gpus))
	}
	uuidShape := regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for i, g := range gpus {
		want := GPUInfo{Index: int32(i), UUID: GPUUUID("h100-1", i), Model: "H100-80GB", MemoryMiB: 81920, Healthy: true}
		if g != want {
			t.Errorf("gpu %d = %+v, want %+v", i, g, want)
		}
		if !uuidShape.MatchString(g.UUID) {
			t.Errorf("gpu %d uuid %q is not GPU-<uuid>", i, g.UUID)
		}
		seen[g.UUID] = true
	}
	seen[GPUUUID("h100-0", 0)] = true
	if len(seen) != 9 {
		t.Errorf("GPU UUIDs collide across indexes or nodes")
	}
	if GPUUUID("h100-1", 3) != gpus[3].UUID {
		t.Errorf("GPUUUID is not deterministic")
	}
}

func names(nodes []*corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}
