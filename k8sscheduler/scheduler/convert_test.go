package scheduler

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

func TestGPURequest(t *testing.T) {
	tests := []struct {
		name    string
		whole   int64
		ann     map[string]string
		want    bridge.GPURequest
		wantErr string
	}{
		{name: "no GPU", want: bridge.GPURequest{}},
		{name: "whole GPUs", whole: 8, want: bridge.GPURequest{Kind: bridge.GPUWhole, Devices: 8}},
		{name: "KAI fraction", ann: map[string]string{"gpu-fraction": "0.25"}, want: bridge.GPURequest{Kind: bridge.GPUFraction, Milli: 250}},
		{name: "fraction on several devices", ann: map[string]string{"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"},
			want: bridge.GPURequest{Kind: bridge.GPUMultiFraction, Devices: 2, Milli: 500}},
		{name: "memory in MiB", ann: map[string]string{"gpu-memory": "20480"}, want: bridge.GPURequest{Kind: bridge.GPUMemory, MemoryMiB: 20480}},
		{name: "memory as a quantity", ann: map[string]string{"gpu-memory": "20Gi"}, want: bridge.GPURequest{Kind: bridge.GPUMemory, MemoryMiB: 20480}},
		{name: "fraction of 1 refused", ann: map[string]string{"gpu-fraction": "1"}, wantErr: "strictly between 0 and 1"},
		{name: "fraction not a number", ann: map[string]string{"gpu-fraction": "half"}, wantErr: "gpu-fraction=\"half\""},
		{name: "fraction with whole GPUs", whole: 1, ann: map[string]string{"gpu-fraction": "0.5"}, wantErr: "one or the other"},
		{name: "fraction and memory", ann: map[string]string{"gpu-fraction": "0.5", "gpu-memory": "100"}, wantErr: "both set"},
		{name: "zero memory", ann: map[string]string{"gpu-memory": "0"}, wantErr: "positive"},
		{name: "bad device count", ann: map[string]string{"gpu-fraction": "0.5", "gpu-fraction-num-devices": "0"}, wantErr: ">= 1"},
		{name: "memory on several devices", ann: map[string]string{"gpu-memory": "100", "gpu-fraction-num-devices": "2"}, wantErr: "not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := gpuRequest(tt.whole, tt.ann)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("gpuRequest = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestConvertNode(t *testing.T) {
	labels := map[string]string{v1alpha1.GPUMemoryLabel: "81920", v1alpha1.GPUProductLabel: "H100", v1alpha1.PartitionLabel: "h100"}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		v1alpha1.GPUResource: resource.MustParse("2"), "rdma/ib": resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}
	node := func(mut func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels}, Status: corev1.NodeStatus{Allocatable: alloc}}
		if mut != nil {
			mut(n)
		}
		return n
	}
	tests := []struct {
		name        string
		node        *corev1.Node
		unsched     bool
		gpus        []bridge.GPU
		wantErr     string
		checkLabels bool
	}{
		{name: "labels only", node: node(nil)},
		{name: "cordoned", node: node(func(n *corev1.Node) { n.Spec.Unschedulable = true }), unsched: true},
		{name: "quarantined", node: node(func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: v1alpha1.QuarantineTaint, Effect: corev1.TaintEffectNoSchedule}}
		}), unsched: true},
		// Other taints keep off only the pods that do not tolerate them (TestNodeClasses).
		{name: "not ready", node: node(func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}}
		})},
		{name: "agent annotation", node: node(func(n *corev1.Node) {
			n.Annotations = map[string]string{v1alpha1.NodeGPUsAnnotation: `[{"index":0,"uuid":"GPU-a","model":"H100","memoryMiB":81920,"healthy":true},{"index":1,"uuid":"GPU-b","model":"H100","memoryMiB":81920,"healthy":false}]`}
		}), gpus: []bridge.GPU{{Index: 0, UUID: "GPU-a", Model: "H100", MemoryMiB: 81920}, {Index: 1, UUID: "GPU-b", Model: "H100", MemoryMiB: 81920, Unhealthy: true}}},
		{name: "bad annotation falls back to labels", node: node(func(n *corev1.Node) {
			n.Annotations = map[string]string{v1alpha1.NodeGPUsAnnotation: `{"index":0}`}
		}), wantErr: "not a JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := convertNode(tt.node)
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if got.Unschedulable != tt.unsched {
				t.Errorf("Unschedulable = %v, want %v", got.Unschedulable, tt.unsched)
			}
			if got.Allocatable.GPUMilli != 2000 || got.Allocatable.GPUMemoryMiB != 2*81920 || got.Allocatable.CPUMilli != 64000 {
				t.Errorf("Allocatable = %+v, want 2 GPUs of 81920 MiB and 64 CPUs", got.Allocatable)
			}
			if want := []bridge.Quantity{{Name: v1alpha1.GPUResource, Value: 2}, {Name: podsResource, Value: 110}, {Name: "rdma/ib", Value: 4}}; !slices.Equal(got.Allocatable.Extended, want) {
				t.Errorf("Extended = %+v, want %+v", got.Allocatable.Extended, want)
			}
			if len(got.GPUs) != len(tt.gpus) {
				t.Fatalf("GPUs = %+v, want %+v", got.GPUs, tt.gpus)
			}
			for i := range tt.gpus {
				if !sameGPU(got.GPUs[i], tt.gpus[i]) {
					t.Errorf("GPU %d = %+v, want %+v", i, got.GPUs[i], tt.gpus[i])
				}
			}
		})
	}
}

func TestPartitionOf(t *testing.T) {
	parts := []partitionEntry{
		{p: bridge.Partition{Name: "big"}, selector: map[string]string{"pool": "big", "zone": "a"}},
		{p: bridge.Partition{Name: "small"}, selector: map[string]string{"pool": "small"}},
	}
	tests := []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"pool": "big", "zone": "a"}, "big"},
		{map[string]string{"pool": "big", "zone": "b", v1alpha1.PartitionLabel: "h100"}, "h100"},
		{map[string]string{"pool": "small"}, "small"},
		{map[string]string{}, ""},
	}
	for _, tt := range tests {
		if got := partitionOf(tt.labels, parts); got != tt.want {
			t.Errorf("partitionOf(%v) = %q, want %q", tt.labels, got, tt.want)
		}
	}
}

func TestExpandQuotas(t *testing.T) {
	q := convertQueue(&v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "nlp"}, Spec: v1alpha1.QueueSpec{Quotas: []v1alpha1.PartitionQuota{
		{Partition: "*", GPU: &v1alpha1.ResourceQuota{Quota: ptr(resource.MustParse("2"))}},
		{Partition: "h100", GPU: &v1alpha1.ResourceQuota{Quota: ptr(resource.MustParse("8")), Limit: ptr(resource.MustParse("16"))}},
	}}})
	got := expandQuotas(q, []string{"a100", "h100", "l4"})
	want := map[string]bridge.ResourceQuota{
		"h100": {Quota: 8000, Limit: 16000, OverQuotaWeight: 1},
		"a100": {Quota: 2000, OverQuotaWeight: 1},
		"l4":   {Quota: 2000, OverQuotaWeight: 1},
	}
	if len(got.Quotas) != len(want) {
		t.Fatalf("quotas = %+v, want one per partition", got.Quotas)
	}
	for _, pq := range got.Quotas {
		if pq.GPU != want[pq.Partition] {
			t.Errorf("%s: GPU quota = %+v, want %+v", pq.Partition, pq.GPU, want[pq.Partition])
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestAssignmentAnnotations(t *testing.T) {
	tests := []struct {
		name    string
		bind    bridge.Bind
		visible string
		portion string
	}{
		{name: "whole GPUs", bind: bridge.Bind{GPUs: []bridge.BoundGPU{{Index: 0, UUID: "GPU-a"}, {Index: 3, UUID: "GPU-d"}}, GPUMilli: 1000},
			visible: "GPU-a,GPU-d", portion: "1"},
		{name: "fraction", bind: bridge.Bind{GPUs: []bridge.BoundGPU{{Index: 1, UUID: "GPU-b"}}, GPUMilli: 250, GPUMemoryMiB: 20480},
			visible: "GPU-b", portion: "0.25"},
		{name: "indices without UUIDs", bind: bridge.Bind{GPUs: []bridge.BoundGPU{{Index: 2}}, GPUMilli: 1000}, visible: "2", portion: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, ok := assignmentOf(&tt.bind)
			if !ok {
				t.Fatal("assignmentOf reported no GPUs")
			}
			ann := assignmentAnnotations(a)
			if ann[v1alpha1.VisibleDevicesAnnotation] != tt.visible || ann[v1alpha1.GPUPortionAnnotation] != tt.portion {
				t.Errorf("annotations = %v, want visible %q portion %q", ann, tt.visible, tt.portion)
			}
			back, err := v1alpha1.ParseGPUAssignment(ann[v1alpha1.GPUAssignmentAnnotation])
			if err != nil || len(back.GPUs) != len(tt.bind.GPUs) || back.GPUMemoryMiB != tt.bind.GPUMemoryMiB {
				t.Errorf("ParseGPUAssignment = %+v, %v", back, err)
			}
			rt := runningTask("p", "g0", "n", &back, metav1.Now().Time)
			if want := tt.bind.GPUMilli; want < 1000 && rt.GPUMilli != want {
				t.Errorf("running task portion = %d, want %d", rt.GPUMilli, want)
			}
		})
	}
	if _, ok := assignmentOf(&bridge.Bind{}); ok {
		t.Error("a bind without GPUs has an assignment")
	}
	if _, err := v1alpha1.ParseGPUAssignment(`{"gpus":[],"portion":2}`); err == nil {
		t.Error("portion 2 accepted")
	}
}

func TestConditionReason(t *testing.T) {
	for in, want := range map[string]string{"stale-gang": "StaleGang", "Resources": "Resources", "reclaim": "Reclaim", "": "Unknown",
		bridge.ReasonMaintenance: "ReqNodeNotAvail,ReservedForMaintenance", bridge.ReasonReservationDeleted: "ReservationDeleted"} {
		if got := conditionReason(in); got != want {
			t.Errorf("conditionReason(%q) = %q, want %q", in, got, want)
		}
	}
}

// A new version of a pod reads its GPU assignment from its own annotation: the one parsed
// before is kept only while the annotation is the same.
func TestConvertPodAfterKeepsOnlyAnUnchangedAssignment(t *testing.T) {
	one := `{"gpus":[{"index":1}],"portion":1}`
	two := `{"gpus":[{"index":2}],"portion":0.5}`
	tests := []struct {
		name      string
		prev, now string // annotations; "" for none
		wantIndex int32  // -1: no assignment
		reused    bool
	}{
		{"unchanged", one, one, 1, true},
		{"changed", one, two, 2, false},
		{"newly bound", "", two, 2, false},
		{"removed", one, "", -1, false},
	}
	for _, tt := range tests {
		ann := func(raw string) map[string]string {
			if raw == "" {
				return nil
			}
			return map[string]string{v1alpha1.GPUAssignmentAnnotation: raw}
		}
		prev := convertPod(testPod("p", "1", ann(tt.prev), "n1"), "sluice")
		got := convertPodAfter(testPod("p", "1", ann(tt.now), "n1"), "sluice", prev)
		switch {
		case tt.wantIndex < 0 && got.assignment != nil:
			t.Errorf("%s: assignment %+v, want none", tt.name, got.assignment)
		case tt.wantIndex >= 0 && (got.assignment == nil || got.assignment.GPUs[0].Index != tt.wantIndex):
			t.Errorf("%s: assignment %+v, want GPU %d", tt.name, got.assignment, tt.wantIndex)
		case tt.wantIndex >= 0 && (got.assignment == prev.assignment) != tt.reused:
			t.Errorf("%s: parsed again = %v, want %v", tt.name, got.assignment != prev.assignment, !tt.reused)
		}
	}
}
