package kube

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

func gpuNode(name string, readyStatus corev1.ConditionStatus, taints []corev1.Taint, cordoned bool) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1alpha1.PartitionLabel: "h100", v1alpha1.GPUProductLabel: "NVIDIA-H100-80GB-HBM3"}},
		Spec: corev1.NodeSpec{Taints: taints, Unschedulable: cordoned},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
				v1alpha1.GPUResource: resource.MustParse("8"),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: readyStatus}},
		},
	}
}

func TestNodeFrom(t *testing.T) {
	parts := []v1alpha1.Partition{
		{ObjectMeta: metav1.ObjectMeta{Name: "h100"}, Spec: v1alpha1.PartitionSpec{NodeSelector: map[string]string{v1alpha1.PartitionLabel: "h100"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a100"}, Spec: v1alpha1.PartitionSpec{NodeSelector: map[string]string{v1alpha1.PartitionLabel: "a100"}}},
	}
	quarantine := []corev1.Taint{{Key: v1alpha1.QuarantineTaint, Value: "XID 79", Effect: corev1.TaintEffectNoSchedule}}
	cases := []struct {
		name   string
		node   *corev1.Node
		use    usage
		state  []string
		reason string
		used   string
	}{
		{"idle", gpuNode("n1", corev1.ConditionTrue, nil, false), usage{}, []string{"IDLE"}, "", "gpu:nvidia-h100-80gb-hbm3:0"},
		{"mixed", gpuNode("n1", corev1.ConditionTrue, nil, false), usage{cpuMilli: 4000, gpus: 2}, []string{"MIXED"}, "", "gpu:nvidia-h100-80gb-hbm3:2"},
		{"all GPUs taken", gpuNode("n1", corev1.ConditionTrue, nil, false), usage{cpuMilli: 1000, gpus: 8}, []string{"ALLOCATED"}, "", "gpu:nvidia-h100-80gb-hbm3:8"},
		{"not ready", gpuNode("n1", corev1.ConditionFalse, nil, false), usage{}, []string{"DOWN"}, "Not responding", "gpu:nvidia-h100-80gb-hbm3:0"},
		{"quarantined", gpuNode("n1", corev1.ConditionTrue, quarantine, false), usage{gpus: 1}, []string{"MIXED", "DRAIN"}, "XID 79", "gpu:nvidia-h100-80gb-hbm3:1"},
		{"cordoned", gpuNode("n1", corev1.ConditionTrue, nil, true), usage{}, []string{"IDLE", "DRAIN"}, "cordoned", "gpu:nvidia-h100-80gb-hbm3:0"},
	}
	for _, tc := range cases {
		n := NodeFrom(tc.node, tc.use, parts)
		if !reflect.DeepEqual(n.State, tc.state) || n.Reason != tc.reason || n.GRESUsed != tc.used {
			t.Errorf("%s: state %v reason %q used %q", tc.name, n.State, n.Reason, n.GRESUsed)
		}
		if n.GRES != "gpu:nvidia-h100-80gb-hbm3:8" || n.CPUs != 64 || n.MemoryMiB != 512<<10 || !reflect.DeepEqual(n.Partitions, []string{"h100"}) {
			t.Errorf("%s: inventory %+v", tc.name, n)
		}
	}
}

func TestPodUsageCountsBoundLivePods(t *testing.T) {
	pod := func(node string, phase corev1.PodPhase, gpus string) corev1.Pod {
		return corev1.Pod{
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("500m"), v1alpha1.GPUResource: resource.MustParse(gpus)}}}}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	u := podUsage([]corev1.Pod{pod("n1", corev1.PodRunning, "2"), pod("n1", corev1.PodPending, "1"), pod("n1", corev1.PodSucceeded, "4"), pod("", corev1.PodPending, "8")})
	if got := u["n1"]; got.gpus != 3 || got.cpuMilli != 1000 || len(u) != 1 {
		t.Errorf("usage %+v", u)
	}
}

// TestCatalogKnowsPartitionNodes: the catalogue counts each partition's
// nodes (drained and down ones too) and groups them by size, so a
// submission can be checked against the largest.
func TestCatalogKnowsPartitionNodes(t *testing.T) {
	parts := []v1alpha1.Partition{
		{ObjectMeta: metav1.ObjectMeta{Name: "h100"}, Spec: v1alpha1.PartitionSpec{NodeSelector: map[string]string{v1alpha1.PartitionLabel: "h100"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "empty"}, Spec: v1alpha1.PartitionSpec{NodeSelector: map[string]string{v1alpha1.PartitionLabel: "none"}}},
	}
	small := gpuNode("n3", corev1.ConditionTrue, nil, false)
	small.Status.Allocatable[v1alpha1.GPUResource] = resource.MustParse("4")
	nodes := []corev1.Node{*gpuNode("n1", corev1.ConditionTrue, nil, false), *gpuNode("n2", corev1.ConditionFalse, nil, true), *small}
	cat := CatalogFrom(parts, nil, nil)
	withNodes(cat, parts, nodes)
	h := cat.Partitions["h100"]
	want := map[slurmapi.NodeSize]bool{{CPUs: 64, MemoryMiB: 512 << 10, GPUs: 8, Count: 2}: true, {CPUs: 64, MemoryMiB: 512 << 10, GPUs: 4, Count: 1}: true}
	if !h.NodesKnown || h.NodeCount != 3 || len(h.NodeSizes) != 2 || !want[h.NodeSizes[0]] || !want[h.NodeSizes[1]] {
		t.Errorf("h100: %+v", h)
	}
	if e := cat.Partitions["empty"]; !e.NodesKnown || e.NodeCount != 0 || len(e.NodeSizes) != 0 {
		t.Errorf("empty: %+v", e)
	}
}

// TestNodeFromValidation: the node's last validation shows as its Comment (scontrol show
// node); a quarantined node whose validation failed says what failed in its reason
// (sinfo -R); an idle-node validation pod does not make the node look busy.
func TestNodeFromValidation(t *testing.T) {
	at := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	validated := func(n *corev1.Node, v v1alpha1.NodeValidation) *corev1.Node {
		n.Annotations = map[string]string{v1alpha1.LastValidationAnnotation: v.Format()}
		return n
	}
	quarantine := []corev1.Taint{{Key: v1alpha1.QuarantineTaint, Value: "ValidationFailed", Effect: corev1.TaintEffectNoSchedule}}
	cases := []struct {
		name, comment, reason string
		node                  *corev1.Node
	}{
		{"passed", "LastValidation=Passed 2026-12-03T14:00:00Z (12s, idle)", "", validated(gpuNode("n1", corev1.ConditionTrue, nil, false),
			v1alpha1.NodeValidation{Kind: "idle", StartedAt: at, FinishedAt: at.Add(12 * time.Second), Result: "Passed"})},
		{"failed and quarantined", "LastValidation=Failed 2026-12-03T14:00:00Z (3s, idle): validate exited 1",
			"ValidationFailed: validation validate exited 1", validated(gpuNode("n1", corev1.ConditionTrue, quarantine, false),
				v1alpha1.NodeValidation{Kind: "idle", StartedAt: at, FinishedAt: at.Add(3 * time.Second), Result: "Failed", Detail: "validate exited 1"})},
		{"never validated", "", "", gpuNode("n1", corev1.ConditionTrue, nil, false)},
		{"recent faults", "RecentFaults=2 (last 2026-12-03T14:00:00Z GPUXidError, NodeReboot)", "", func() *corev1.Node {
			n := gpuNode("n1", corev1.ConditionTrue, nil, false)
			n.Annotations = map[string]string{v1alpha1.RemediationAnnotation: `{"history":[` +
				`{"at":"2026-12-01T10:00:00Z","condition":"GPURowRemapPending","action":"GPUReset"},` +
				`{"at":"2026-12-03T14:00:00Z","condition":"GPUXidError","action":"NodeReboot","xids":[79],"quarantined":true}]}`}
			return n
		}()},
	}
	for _, tc := range cases {
		n := NodeFrom(tc.node, usage{}, nil)
		if n.Comment != tc.comment || n.Reason != tc.reason {
			t.Errorf("%s: comment %q reason %q, want %q %q", tc.name, n.Comment, n.Reason, tc.comment, tc.reason)
		}
	}
	idle := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.IdleValidationLabel: "h100"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			v1alpha1.GPUResource: resource.MustParse("8")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if u := podUsage([]corev1.Pod{idle}); u["n1"].gpus != 0 {
		t.Errorf("an idle-node validation counted as use: %+v", u)
	}
}

// A node's topology is its domain at each level of its partitions' spec.topology, outermost
// first; levels it has no label for are left out.
func TestNodeFromTopology(t *testing.T) {
	parts := []v1alpha1.Partition{{ObjectMeta: metav1.ObjectMeta{Name: "h100"}, Spec: v1alpha1.PartitionSpec{
		NodeSelector: map[string]string{v1alpha1.PartitionLabel: "h100"}, Topology: []string{"zone", "block", "rack"}}}}
	node := gpuNode("n1", corev1.ConditionTrue, nil, false)
	node.Labels["zone"], node.Labels["rack"] = "a", "r7"
	if got := NodeFrom(node, usage{}, parts).Topology; got != "zone=a,rack=r7" {
		t.Errorf("topology %q, want zone=a,rack=r7", got)
	}
}
