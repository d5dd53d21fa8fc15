package scheduler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/bridge"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// convertNode turns a node into the core's view, without partition and Used (the cache
// fills those in). A malformed GPU annotation is reported in err while the node is still
// converted from its labels, so a bad annotation costs detail, not the node.
func convertNode(n *corev1.Node) (bridge.Node, error) {
	out := bridge.Node{
		Name:          n.Name,
		Labels:        n.Labels,
		Allocatable:   resourcesOf(n.Status.Allocatable),
		Unschedulable: n.Spec.Unschedulable || quarantined(n.Spec.Taints),
	}
	// Every pod asks for one of the node's pods. A node that does not say how many it
	// takes (every kubelet does) is not limited.
	pods := int64(1 << 20)
	if q, ok := n.Status.Allocatable[corev1.ResourcePods]; ok {
		pods = q.Value()
	}
	out.Allocatable.Extended = addQuantity(out.Allocatable.Extended, podsResource, pods)
	gpus := out.Allocatable.GPUMilli / 1000
	if mem, err := strconv.ParseInt(n.Labels[v1alpha1.GPUMemoryLabel], 10, 64); err == nil && mem > 0 {
		out.Allocatable.GPUMemoryMiB = mem * gpus
	}
	// The node's nvidia.com/gpu devices are MIG slices, handed out only whole.
	mig := n.Labels[v1alpha1.MIGStrategyLabel] == "single" || n.Labels[v1alpha1.MIGStrategyLabel] == "mixed"
	raw, ok := n.Annotations[v1alpha1.NodeGPUsAnnotation]
	if !ok {
		if mig && gpus > 0 {
			out.GPUs = labelGPUs(gpus, out.Allocatable.GPUMemoryMiB/gpus, n.Labels[v1alpha1.GPUProductLabel])
		}
		return out, nil
	}
	list, err := v1alpha1.ParseNodeGPUs(raw)
	if err != nil {
		return out, fmt.Errorf("%v; using the node's GPU labels", err)
	}
	out.GPUs = make([]bridge.GPU, len(list))
	for i, g := range list {
		out.GPUs[i] = bridge.GPU{Index: g.Index, UUID: g.UUID, MemoryMiB: g.MemoryMiB, Model: g.Model, Unhealthy: !g.Healthy, MIG: mig}
	}
	return out, nil
}

// labelGPUs lists count identical MIG devices known only from labels.
func labelGPUs(count, memMiB int64, model string) []bridge.GPU {
	out := make([]bridge.GPU, count)
	for i := range out {
		out[i] = bridge.GPU{Index: int32(i), MemoryMiB: memMiB, Model: model, MIG: true}
	}
	return out
}

// quarantined reports whether the node carries the quarantine taint: it takes no work from
// anyone. Other taints keep off only the pods that do not tolerate them (nodeClass).
func quarantined(taints []corev1.Taint) bool {
	for _, t := range taints {
		if t.Key == v1alpha1.QuarantineTaint {
			return true
		}
	}
	return false
}

// addQuantity adds v of the named resource to a list kept sorted by name.
func addQuantity(l []bridge.Quantity, name string, v int64) []bridge.Quantity {
	i, found := slices.BinarySearchFunc(l, name, func(q bridge.Quantity, n string) int { return strings.Compare(q.Name, n) })
	if found {
		l[i].Value += v
		return l
	}
	return slices.Insert(l, i, bridge.Quantity{Name: name, Value: v})
}

func tolerates(keys []string, key string) bool {
	for _, k := range keys {
		if k == key {
			return true
		}
	}
	return false
}

// resourcesOf converts a resource list: CPU, memory, whole GPUs and extended resources
// (names with a domain, except the GPU one). Pods, storage and hugepages are not divided
// by the core and are left out.
func resourcesOf(l corev1.ResourceList) bridge.Resources {
	var r bridge.Resources
	for name, q := range l {
		switch {
		case name == corev1.ResourceCPU:
			r.CPUMilli = q.MilliValue()
		case name == corev1.ResourceMemory:
			r.MemoryBytes = q.Value()
		case name == v1alpha1.GPUResource:
			r.GPUMilli = q.Value() * 1000
			// Also an extended resource, as the kubelet admits it: a node whose GPUs come
			// through DRA (dra_nodes.go) has none of it, so takes no device-plugin GPU pod.
			r.Extended = append(r.Extended, bridge.Quantity{Name: string(name), Value: q.Value()})
		case strings.Contains(string(name), "/") && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) &&
			!strings.HasPrefix(string(name), "kubernetes.io/"):
			r.Extended = append(r.Extended, bridge.Quantity{Name: string(name), Value: q.Value()})
		}
	}
	// map order is random; a stable order lets the cache compare converted nodes
	slices.SortFunc(r.Extended, func(a, b bridge.Quantity) int { return strings.Compare(a.Name, b.Name) })
	return r
}

// partitionOf picks a node's partition as v1alpha1.NodePartition does, over the cache's
// converted partitions (kept in name order): the first whose selector matches, else the
// node's partition label.
func partitionOf(labels map[string]string, parts []partitionEntry) string {
	for i := range parts {
		if v1alpha1.SelectsNode(parts[i].selector, labels) {
			return parts[i].p.Name
		}
	}
	return labels[v1alpha1.PartitionLabel]
}
