package cluster

import (
	"crypto/sha256"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Labels and annotations the simulated nodes carry: the names Sluice reads on
// real nodes (one definition, in the API package). The nvidia.com ones are what
// the NVIDIA GPU Operator's feature discovery publishes on real GPU nodes.
const (
	LabelGPUProduct    = v1alpha1.GPUProductLabel
	LabelGPUMemory     = v1alpha1.GPUMemoryLabel // MiB per GPU
	LabelGPUCount      = v1alpha1.GPUCountLabel
	LabelMIGStrategy   = v1alpha1.MIGStrategyLabel
	LabelPartition     = v1alpha1.PartitionLabel
	AnnotationGPUs     = v1alpha1.NodeGPUsAnnotation // JSON array of GPUInfo
	ResourceGPU        = corev1.ResourceName(v1alpha1.GPUResource)
	annotationKwokNode = "kwok.x-k8s.io/node"
	kwokNodeValue      = "fake"
	// podsPerNode is the kubelet's default max-pods.
	podsPerNode = "110"
)

// LabelGPUClique is the NVLink clique GPU feature discovery publishes on a node whose
// GPUs NVLink joins to other nodes' (a pool's cliqueSize).
const LabelGPUClique = "nvidia.com/gpu.clique"

// GPUInfo is one entry of the sluice.dev/gpus node annotation: the API package's one type
// for it, which the agent writes on real nodes and the scheduler reads.
type GPUInfo = v1alpha1.NodeGPU

// NodeName is the name of node i (0-based) of a pool.
func NodeName(pool string, i int) string { return fmt.Sprintf("%s-%d", pool, i) }

// GPUUUID is a stable UUID-shaped identifier for GPU index on node, in the
// GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx form nvidia-smi prints, so runs of
// the rig are reproducible.
func GPUUUID(node string, index int) string {
	h := sha256.Sum256([]byte(node + "/" + strconv.Itoa(index)))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// Nodes builds the Node objects for every simulated pool in the spec. Status carries
// the capacity; kwok fills in conditions and keeps them fresh. A real pool's nodes are
// registered by their kubelets.
func (s Spec) Nodes() ([]*corev1.Node, error) {
	var nodes []*corev1.Node
	for _, p := range s.NodePools {
		if p.Real {
			continue
		}
		for i := range p.Count {
			n, err := p.node(i)
			if err != nil {
				return nil, err
			}
			nodes = append(nodes, n)
		}
	}
	return nodes, nil
}

// node builds node i (0-based) of the pool.
func (p NodePool) node(i int) (*corev1.Node, error) {
	name := NodeName(p.Name, i)
	cpu, err := resource.ParseQuantity(p.CPU)
	if err != nil {
		return nil, fmt.Errorf("pool %s: cpu: %w", p.Name, err)
	}
	mem, err := resource.ParseQuantity(p.Memory)
	if err != nil {
		return nil, fmt.Errorf("pool %s: memory: %w", p.Name, err)
	}
	labels := map[string]string{
		"kubernetes.io/hostname": name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"type":                   "kwok",
		LabelPartition:           p.Name,
	}
	annotations := map[string]string{annotationKwokNode: kwokNodeValue}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    cpu,
		corev1.ResourceMemory: mem,
		corev1.ResourcePods:   resource.MustParse(podsPerNode),
	}
	if p.GPUsPerNode > 0 {
		labels[LabelGPUProduct] = p.GPUModel
		labels[LabelGPUMemory] = strconv.Itoa(p.GPUMemoryMiB)
		labels[LabelGPUCount] = strconv.Itoa(p.GPUsPerNode)
		labels[LabelMIGStrategy] = p.migStrategy()
		if clique := p.cliqueID(i); clique != "" {
			labels[LabelGPUClique] = clique
		}
	}
	if p.GPUsPerNode > 0 && !p.DRA {
		// A DRA pool's GPUs are in its ResourceSlices (dra.go), not in the node's
		// capacity nor in the annotation the device plugin's GPUs are listed in.
		capacity[ResourceGPU] = *resource.NewQuantity(int64(p.GPUsPerNode), resource.DecimalSI)
		data, err := p.gpuAnnotation(name)
		if err != nil {
			return nil, err
		}
		annotations[AnnotationGPUs] = data
	}
	// Pool labels come last so a spec can override the defaults above on purpose.
	for k, v := range p.Labels {
		labels[k] = v
	}
	strictGroups := true
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Phase:       corev1.NodePending,
			// What a kubelet reports over a runtime that supports
			// supplementalGroupsPolicy (containerd 2.0, CRI-O 1.31).
			Features: &corev1.NodeFeatures{SupplementalGroupsPolicy: &strictGroups},
		},
	}, nil
}

// gpuAnnotation is node name's sluice.dev/gpus annotation: every GPU healthy, with the
// UUIDs GPUUUID gives (a real node's device plugin hands out the same).
func (p NodePool) gpuAnnotation(name string) (string, error) {
	gpus := make([]GPUInfo, p.GPUsPerNode)
	for i := range gpus {
		gpus[i] = GPUInfo{Index: int32(i), UUID: GPUUUID(name, i), Model: p.GPUModel, MemoryMiB: int64(p.GPUMemoryMiB), Healthy: true}
	}
	return v1alpha1.FormatNodeGPUs(gpus), nil
}

func (p NodePool) migStrategy() string {
	if p.MIGMode == "" {
		return "none"
	}
	return p.MIGMode
}
