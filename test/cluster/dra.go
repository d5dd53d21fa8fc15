package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The rig's stand-in for NVIDIA's DRA driver: a DRA pool's nodes (NodePool.DRA) publish
// their GPUs in ResourceSlices the way that driver does, so kube-scheduler and Sluice
// allocate them through resource.k8s.io/v1. Nothing prepares the devices on a node: kwok
// runs no container, so what is simulated ends at the allocation.
const (
	// DRADriver is the driver name of NVIDIA's DRA driver, in every slice and allocation.
	DRADriver = "gpu.nvidia.com"
	// DeviceClassGPU is the DeviceClass of whole GPUs, DeviceClassMIG of MIG partitions.
	DeviceClassGPU = "gpu.nvidia.com"
	DeviceClassMIG = "mig.nvidia.com"
	// DRADriverVersion is every device's driverVersion attribute.
	DRADriverVersion = "550.90.7"
	// MIGSlicesPerGPU is the memory slices of a GPU (H100 and A100 class): a 1g MIG
	// partition takes one, so a GPU offers this many.
	MIGSlicesPerGPU = 7
)

// Device attributes (in the driver's domain: device.attributes["gpu.nvidia.com"].type in
// CEL), their type values, the device capacity and the counters of a GPU's counter set.
const (
	DRAAttrType          = "type"          // DRATypeGPU or DRATypeMIG
	DRAAttrIndex         = "index"         // the GPU's index; a MIG device's is its parent's
	DRAAttrUUID          = "uuid"          // a whole GPU's UUID (GPUUUID)
	DRAAttrParentUUID    = "parentUUID"    // a MIG device's GPU's UUID
	DRAAttrProfile       = "profile"       // a MIG device's profile, such as 1g.10gb
	DRAAttrProductName   = "productName"   // the pool's gpuModel
	DRAAttrArchitecture  = "architecture"  // Hopper, Ampere, or "" when the rig does not know
	DRAAttrDriverVersion = "driverVersion" // DRADriverVersion, as a version
	DRAAttrCliqueID      = "cliqueID"      // the node's NVLink clique, with a pool's cliqueSize
	DRATypeGPU           = "gpu"
	DRATypeMIG           = "mig"
	DRACapacityMemory    = "memory" // a device's memory
	DRACounterMemory     = "memory" // a GPU's memory, shared by its whole device and its MIG devices
	DRACounterSlices     = "slices" // a GPU's memory slices (MIGSlicesPerGPU)
)

// GPUDeviceName is the device name of a node's whole GPU gpu.
func GPUDeviceName(gpu int) string { return fmt.Sprintf("gpu-%d", gpu) }

// MIGDeviceName is the device name of the 1g MIG partition j (0-based) of GPU gpu.
func MIGDeviceName(gpu, j int) string { return fmt.Sprintf("gpu-%d-mig-1g-%d", gpu, j) }

// CounterSetName is the shared counter set of GPU gpu, from which its whole device and
// its MIG devices consume.
func CounterSetName(gpu int) string { return fmt.Sprintf("gpu-%d-counters", gpu) }

// DeviceClasses are the classes NVIDIA's driver installs: whole GPUs and MIG partitions.
func DeviceClasses() []*resourcev1.DeviceClass {
	class := func(name, typ string) *resourcev1.DeviceClass {
		expr := fmt.Sprintf("device.driver == %q && device.attributes[%q].%s == %q", DRADriver, DRADriver, DRAAttrType, typ)
		return &resourcev1.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{
				{CEL: &resourcev1.CELDeviceSelector{Expression: expr}},
			}},
		}
	}
	return []*resourcev1.DeviceClass{class(DeviceClassGPU, DRATypeGPU), class(DeviceClassMIG, DRATypeMIG)}
}

// HasDRA tells whether any pool of the spec publishes its GPUs through DRA.
func (s Spec) HasDRA() bool {
	return slices.ContainsFunc(s.NodePools, func(p NodePool) bool { return p.DRA })
}

// ResourceSlices are the ResourceSlices of every node of the spec's DRA pools: one pool per
// node, named after it. Publishing them sets the nodes as their owners. A real node's DRA
// kubelet plugin publishes the same devices under names of its own.
func (s Spec) ResourceSlices() []*resourcev1.ResourceSlice {
	var out []*resourcev1.ResourceSlice
	for _, p := range s.NodePools {
		if !p.DRA {
			continue
		}
		for i := range p.Count {
			out = append(out, p.resourceSlices(i)...)
		}
	}
	return out
}

// partitioned tells whether the pool's GPUs are also offered as MIG partitions.
func (p NodePool) partitioned() bool { return p.MIGMode != "" && p.MIGMode != "none" }

// resourceSlices are node i's: with MIG partitions, the counter sets in slices of their
// own (the API keeps sharedCounters and devices apart) and the devices in slices of at
// most ResourceSliceMaxDevicesWithAdvancedFeatures, as devices that consume counters
// allow; without, the GPUs in slices of at most ResourceSliceMaxDevices.
func (p NodePool) resourceSlices(i int) []*resourcev1.ResourceSlice {
	node := NodeName(p.Name, i)
	var counterSets []resourcev1.CounterSet
	var devices []resourcev1.Device
	perSlice := resourcev1.ResourceSliceMaxDevices
	for g := range p.GPUsPerNode {
		gpu := p.gpuDevice(node, i, g)
		if !p.partitioned() {
			devices = append(devices, gpu)
			continue
		}
		perSlice = resourcev1.ResourceSliceMaxDevicesWithAdvancedFeatures
		set := CounterSetName(g)
		counterSets = append(counterSets, resourcev1.CounterSet{Name: set, Counters: p.gpuCounters(1)})
		gpu.ConsumesCounters = []resourcev1.DeviceCounterConsumption{{CounterSet: set, Counters: p.gpuCounters(1)}}
		devices = append(devices, gpu)
		for j := range MIGSlicesPerGPU {
			mig := p.migDevice(node, i, g, j)
			mig.ConsumesCounters = []resourcev1.DeviceCounterConsumption{{CounterSet: set, Counters: p.gpuCounters(MIGSlicesPerGPU)}}
			devices = append(devices, mig)
		}
	}
	var specs []resourcev1.ResourceSliceSpec
	for sets := range slices.Chunk(counterSets, resourcev1.ResourceSliceMaxCounterSets) {
		specs = append(specs, resourcev1.ResourceSliceSpec{SharedCounters: sets})
	}
	for devs := range slices.Chunk(devices, perSlice) {
		specs = append(specs, resourcev1.ResourceSliceSpec{Devices: devs})
	}
	out := make([]*resourcev1.ResourceSlice, len(specs))
	for k, spec := range specs {
		spec.Driver = DRADriver
		spec.NodeName = ptr.To(node)
		spec.Pool = resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: int64(len(specs))}
		out[k] = &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", node, DRADriver, k)},
			Spec:       spec,
		}
	}
	return out
}

// gpuCounters is the part of a GPU's counters one of parts equal partitions takes: all of
// them for the whole GPU (1), one memory slice and its share of memory for a 1g MIG device.
func (p NodePool) gpuCounters(parts int) map[string]resourcev1.Counter {
	slicesTaken := MIGSlicesPerGPU / parts
	return map[string]resourcev1.Counter{
		DRACounterMemory: {Value: mebibytes(p.GPUMemoryMiB / parts)},
		DRACounterSlices: {Value: *resource.NewQuantity(int64(slicesTaken), resource.DecimalSI)},
	}
}

// gpuDevice is GPU g of node i (named node).
func (p NodePool) gpuDevice(node string, i, g int) resourcev1.Device {
	attrs := p.commonAttributes(i, g)
	attrs[DRAAttrType] = stringAttr(DRATypeGPU)
	attrs[DRAAttrUUID] = stringAttr(GPUUUID(node, g))
	return resourcev1.Device{
		Name:       GPUDeviceName(g),
		Attributes: attrs,
		Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{DRACapacityMemory: {Value: mebibytes(p.GPUMemoryMiB)}},
	}
}

// migDevice is the 1g MIG partition j of GPU g of node i (named node).
func (p NodePool) migDevice(node string, i, g, j int) resourcev1.Device {
	attrs := p.commonAttributes(i, g)
	attrs[DRAAttrType] = stringAttr(DRATypeMIG)
	attrs[DRAAttrParentUUID] = stringAttr(GPUUUID(node, g))
	attrs[DRAAttrProfile] = stringAttr(p.migProfile())
	return resourcev1.Device{
		Name:       MIGDeviceName(g, j),
		Attributes: attrs,
		Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{DRACapacityMemory: {Value: mebibytes(p.GPUMemoryMiB / MIGSlicesPerGPU)}},
	}
}

// commonAttributes are what a GPU and its MIG devices share.
func (p NodePool) commonAttributes(i, g int) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
	attrs := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		DRAAttrIndex:         {IntValue: ptr.To(int64(g))},
		DRAAttrProductName:   stringAttr(p.GPUModel),
		DRAAttrArchitecture:  stringAttr(gpuArchitecture(p.GPUModel)),
		DRAAttrDriverVersion: {VersionValue: ptr.To(DRADriverVersion)},
	}
	if clique := p.cliqueID(i); clique != "" {
		attrs[DRAAttrCliqueID] = stringAttr(clique)
	}
	return attrs
}

// migProfile is the name of the pool's 1g MIG profile: 1g.5gb on 40 GB cards, 1g.10gb on
// 80 GB ones.
func (p NodePool) migProfile() string {
	if p.GPUMemoryMiB <= 40*1024 {
		return "1g.5gb"
	}
	return "1g.10gb"
}

// cliqueID is node i's NVLink clique, "" when the pool has none.
func (p NodePool) cliqueID(i int) string {
	if p.CliqueSize <= 0 {
		return ""
	}
	return fmt.Sprintf("%s-clique-%d", p.Name, i/p.CliqueSize)
}

// gpuArchitecture is the architecture of a GPU model, "" for one the rig does not know.
func gpuArchitecture(model string) string {
	switch m := strings.ToUpper(model); {
	case strings.Contains(m, "H100"), strings.Contains(m, "H200"):
		return "Hopper"
	case strings.Contains(m, "A100"):
		return "Ampere"
	}
	return ""
}

func stringAttr(s string) resourcev1.DeviceAttribute {
	return resourcev1.DeviceAttribute{StringValue: &s}
}

func mebibytes(mib int) resource.Quantity {
	return *resource.NewQuantity(int64(mib)<<20, resource.BinarySI)
}

// publishDRA creates the DeviceClasses and every simulated DRA node's ResourceSlices, owned
// by their node as a driver's are, so deleting a node takes its devices along. What exists
// already is left as it is. A real DRA node's kubelet plugin publishes its own.
func (c *Cluster) publishDRA(ctx context.Context) error {
	if !c.spec.HasDRA() {
		return nil
	}
	began := time.Now()
	api := c.client.ResourceV1()
	for _, class := range DeviceClasses() {
		if _, err := api.DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create DeviceClass %s: %w", class.Name, err)
		}
	}
	list, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelPartition})
	if err != nil {
		return fmt.Errorf("list nodes for their ResourceSlices: %w", err)
	}
	uids := map[string]types.UID{}
	for _, n := range list.Items {
		uids[n.Name] = n.UID
	}
	nodes := 0
	for _, p := range c.spec.NodePools {
		if !p.DRA || p.Real {
			continue
		}
		for i := range p.Count {
			name := NodeName(p.Name, i)
			uid, ok := uids[name]
			if !ok {
				return fmt.Errorf("publish DRA devices: node %s does not exist", name)
			}
			for _, s := range p.resourceSlices(i) {
				s.OwnerReferences = []metav1.OwnerReference{{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Node", Name: name, UID: uid}}
				if _, err := api.ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("create ResourceSlice %s: %w", s.Name, err)
				}
			}
			nodes++
		}
	}
	c.progress("published DRA devices for %d nodes in %s", nodes, time.Since(began).Round(time.Millisecond))
	return nil
}
