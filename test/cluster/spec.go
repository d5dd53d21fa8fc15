// Package cluster runs a local Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) with kwok-simulated GPU nodes, for
// end-to-end tests and `sluice dev`.
package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Spec describes the simulated cluster: one or more pools of identical nodes.
type Spec struct {
	NodePools []NodePool `yaml:"nodePools"`
}

// NodePool is a group of identical nodes. Its name is also the node name prefix
// and the value of the partition label.
type NodePool struct {
	Name         string            `yaml:"name"`
	Count        int               `yaml:"count"`
	GPUsPerNode  int               `yaml:"gpusPerNode"`
	GPUModel     string            `yaml:"gpuModel"`
	GPUMemoryMiB int               `yaml:"gpuMemoryMiB"`
	CPU          string            `yaml:"cpu"`    // a Kubernetes quantity, e.g. "128"
	Memory       string            `yaml:"memory"` // a Kubernetes quantity, e.g. "1Ti"
	Labels       map[string]string `yaml:"labels"`
	// MIGMode is the GPU Operator's MIG strategy: "" or "none", "single", "mixed".
	MIGMode string `yaml:"migMode"`
	// Real makes the pool's nodes real: a kubelet, containerd and runc on this machine
	// run their pods in containers (realnode.go), where kwok would only pretend to. Their
	// CPU and memory are the machine's, as the kubelet reports them, so cpu and memory
	// are not given; their GPUs come from a device plugin with no driver behind it.
	Real bool `yaml:"real"`
	// DRA publishes the pool's GPUs through Dynamic Resource Allocation, as NVIDIA's DRA
	// driver does (dra.go), instead of the device plugin: the nodes keep their GPU
	// Operator labels but carry no nvidia.com/gpu resource and no per-GPU annotation,
	// and each has a ResourceSlice pool of its GPUs. With MIGMode set, every GPU is also
	// offered as MIG partitions that share its memory and slices. On a real pool, a DRA
	// kubelet plugin on each node publishes its pool and prepares the claims allocated
	// there (drakubeletplugin.go); whole GPUs only, so no MIGMode.
	DRA bool `yaml:"dra"`
	// CliqueSize groups the pool's nodes into NVLink cliques of that many consecutive
	// nodes: each node is labelled nvidia.com/gpu.clique (as GPU feature discovery
	// does) and, on a DRA pool, its GPUs carry the clique as the cliqueID attribute.
	// 0 means no cliques.
	CliqueSize int `yaml:"cliqueSize"`
}

// maxRealNodes bounds the real nodes of a rig: each is a kubelet and a containerd on
// the one machine, and N in its 10.88.N.0/24 pod network.
const maxRealNodes = 8

// DefaultSpec is the cluster `sluice dev` starts: two partitions, h100 and a100.
func DefaultSpec() Spec {
	return Spec{NodePools: []NodePool{
		{Name: "h100", Count: 4, GPUsPerNode: 8, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "128", Memory: "1Ti"},
		{Name: "a100", Count: 2, GPUsPerNode: 4, GPUModel: "A100-40GB", GPUMemoryMiB: 40960, CPU: "64", Memory: "512Gi"},
	}}
}

// LoadSpec reads and validates a spec file.
func LoadSpec(path string) (Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Spec{}, err
	}
	spec, err := ParseSpec(data)
	if err != nil {
		return Spec{}, fmt.Errorf("%s: %w", path, err)
	}
	return spec, nil
}

// ParseSpec decodes a YAML spec, rejecting unknown fields (the error names the
// line), and validates it.
func ParseSpec(data []byte) (Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var spec Spec
	if err := dec.Decode(&spec); err != nil {
		if errors.Is(err, io.EOF) {
			return Spec{}, errors.New("empty cluster spec")
		}
		return Spec{}, err
	}
	return spec, spec.Validate()
}

// RealNodeCount is the number of real nodes across all pools.
func (s Spec) RealNodeCount() int {
	n := 0
	for _, p := range s.NodePools {
		if p.Real {
			n += p.Count
		}
	}
	return n
}

// NodeCount is the total number of nodes across all pools.
func (s Spec) NodeCount() int {
	n := 0
	for _, p := range s.NodePools {
		n += p.Count
	}
	return n
}

// Validate reports every problem in the spec, so a user fixes them in one go.
func (s Spec) Validate() error {
	if len(s.NodePools) == 0 {
		return errors.New("cluster spec: nodePools: at least one pool is required")
	}
	var errs []error
	seen := map[string]bool{}
	for i, p := range s.NodePools {
		where := fmt.Sprintf("nodePools[%d] (%s)", i, p.Name)
		for _, msg := range validation.IsDNS1123Label(p.Name) {
			errs = append(errs, fmt.Errorf("%s: name: %s", where, msg))
		}
		if seen[p.Name] {
			errs = append(errs, fmt.Errorf("%s: name: duplicate pool name", where))
		}
		seen[p.Name] = true
		errs = append(errs, p.validate(where)...)
	}
	if n := s.RealNodeCount(); n > maxRealNodes {
		errs = append(errs, fmt.Errorf("cluster spec: %d real nodes in all; at most %d", n, maxRealNodes))
	}
	return errors.Join(errs...)
}

func (p NodePool) validate(where string) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s: %s", where, field, fmt.Sprintf(format, args...)))
	}
	if p.Count < 1 {
		bad("count", "must be at least 1, got %d", p.Count)
	}
	if p.GPUsPerNode < 0 {
		bad("gpusPerNode", "must not be negative, got %d", p.GPUsPerNode)
	}
	if p.GPUsPerNode > 0 {
		if p.GPUModel == "" {
			bad("gpuModel", "required when gpusPerNode > 0")
		}
		for _, msg := range validation.IsValidLabelValue(p.GPUModel) {
			bad("gpuModel", "%s", msg)
		}
		if p.GPUMemoryMiB <= 0 {
			bad("gpuMemoryMiB", "must be positive when gpusPerNode > 0, got %d", p.GPUMemoryMiB)
		}
	}
	if p.DRA && p.GPUsPerNode <= 0 {
		bad("dra", "needs gpusPerNode > 0: DRA publishes the pool's GPUs")
	}
	if p.DRA && p.Real && p.partitioned() {
		bad("migMode", "a real DRA pool offers whole GPUs only: its DRA kubelet plugin prepares a GPU by its UUID, and a stand-in MIG device has none")
	}
	if p.CliqueSize < 0 {
		bad("cliqueSize", "must not be negative, got %d", p.CliqueSize)
	}
	if p.CliqueSize > 0 && p.GPUsPerNode <= 0 {
		bad("cliqueSize", "needs gpusPerNode > 0: a clique is the GPUs NVLink joins")
	}
	if p.CliqueSize > 0 && p.Real {
		bad("cliqueSize", "not for a real pool: its GPUs are not joined by NVLink")
	}
	if p.CliqueSize > 0 && p.Count > 0 {
		for _, msg := range validation.IsValidLabelValue(p.cliqueID(p.Count - 1)) {
			bad("cliqueSize", "clique name %q: %s", p.cliqueID(p.Count-1), msg)
		}
	}
	if p.Real && p.Count > maxRealNodes {
		bad("count", "a real pool has at most %d nodes (each is a kubelet and a containerd on this machine), got %d", maxRealNodes, p.Count)
	}
	for _, f := range []struct{ field, q string }{{"cpu", p.CPU}, {"memory", p.Memory}} {
		field, q := f.field, f.q
		if p.Real {
			if q != "" {
				bad(field, "a real node reports the machine's own; leave it out")
			}
			continue
		}
		if q == "" {
			bad(field, "required (a Kubernetes quantity such as 64 or 512Gi)")
			continue
		}
		if v, err := resource.ParseQuantity(q); err != nil {
			bad(field, "%q is not a Kubernetes quantity", q)
		} else if v.Sign() <= 0 {
			bad(field, "must be positive, got %s", q)
		}
	}
	switch p.MIGMode {
	case "", "none", "single", "mixed":
	default:
		bad("migMode", "must be none, single or mixed, got %q", p.MIGMode)
	}
	for _, k := range slices.Sorted(maps.Keys(p.Labels)) {
		v := p.Labels[k]
		for _, msg := range validation.IsQualifiedName(k) {
			bad("labels", "key %q: %s", k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			bad("labels", "%q value %q: %s", k, v, msg)
		}
	}
	return errs
}
