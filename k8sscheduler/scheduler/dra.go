package scheduler

import (
	"context"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/sluicehq/sluice/bridge"
)

// Dynamic Resource Allocation (resource.k8s.io/v1): the scheduler reads the devices nodes
// publish in ResourceSlices, the DeviceClasses, and the ResourceClaims (and templates) its
// pods name. Devices of a GPU class (Config.GPUDeviceClasses) are the node's GPUs to the
// core, as device-plugin GPUs are, so quota, fair share, reclaim and the ledger treat a
// claimed GPU as they treat nvidia.com/gpu; which devices a claim gets is decided by the
// ecosystem's structured allocator (k8s.io/dynamic-resource-allocation/structured), as in
// kube-scheduler: where a pod's claims could be met at all (dra_pods.go), and, as the pod
// is bound, which free devices it gets (dra_bind.go).

// draState is the cache's view of DRA objects, guarded by cache.mu.
type draState struct {
	slices map[string]*resourceapi.ResourceSlice // by name
	// byNode and byPool index the slices by the node they are local to and by
	// driver/pool, so a node's devices are found without reading every slice.
	byNode map[string]map[string]*resourceapi.ResourceSlice
	byPool map[string]map[string]*resourceapi.ResourceSlice
	// sharedPools are the pools with a slice local to no one node (network-attached
	// devices); claimsByPool the informer's allocated claims by the pools they use.
	sharedPools  map[string]bool
	claimsByPool map[string]map[string]bool
	classes      map[string]*resourceapi.DeviceClass
	claims       map[string]*resourceapi.ResourceClaim // by namespace/name
	templates    map[string]*resourceapi.ResourceClaimTemplate
	// gpuClasses are the device classes whose devices the core counts as whole GPUs.
	gpuClasses map[string]bool
	// users are, by claim or template key, the keys of our pods that name it; pods the DRA
	// pods themselves, so a pod is read again when a claim it names changes.
	users map[string]map[string]bool
	pods  map[string]*corev1.Pod
	// inflight are the claims this scheduler allocated, until the informer shows them so;
	// pending those it has allocated and not written yet (dra_bind.go).
	inflight map[string]*resourceapi.ResourceClaim
	pending  map[string]*resourceapi.ResourceClaim
	celCache *cel.Cache
}

// DefaultGPUDeviceClasses are the device classes counted as whole GPUs when the
// configuration names none: NVIDIA's DRA driver's class for full GPUs.
var DefaultGPUDeviceClasses = []string{"gpu.nvidia.com"}

func newDRAState(gpuClasses []string) *draState {
	d := &draState{
		slices: map[string]*resourceapi.ResourceSlice{}, byNode: map[string]map[string]*resourceapi.ResourceSlice{},
		byPool: map[string]map[string]*resourceapi.ResourceSlice{}, sharedPools: map[string]bool{},
		claimsByPool: map[string]map[string]bool{}, classes: map[string]*resourceapi.DeviceClass{},
		claims: map[string]*resourceapi.ResourceClaim{}, templates: map[string]*resourceapi.ResourceClaimTemplate{},
		gpuClasses: map[string]bool{}, users: map[string]map[string]bool{}, pods: map[string]*corev1.Pod{},
		inflight: map[string]*resourceapi.ResourceClaim{}, pending: map[string]*resourceapi.ResourceClaim{}, celCache: cel.NewCache(100, cel.Features{EnableConsumableCapacity: true}),
	}
	for _, c := range gpuClasses {
		d.gpuClasses[c] = true
	}
	return d
}

// draFeatures are the allocator features kube-scheduler 1.37 runs with by default.
var draFeatures = structured.Features{AdminAccess: true, ConsumableCapacity: true, DeviceTaints: true,
	PartitionableDevices: true, PrioritizedList: true}

// draDevice is one device a node publishes that the core counts as a GPU.
type draDevice struct {
	id  structured.DeviceID
	gpu bridge.GPU
	// counters is the shared counter set the device draws on (a partitionable GPU's), ""
	// when none: a partition drawing on the same set takes this GPU.
	counters string
}

// classLister serves DeviceClasses to the allocator from a copy of the cache's.
type classLister map[string]*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(l))
	for _, c := range l {
		out = append(out, c)
	}
	return out, nil
}

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l[name]; ok {
		return c, nil
	}
	return nil, &missingClassError{name}
}

type missingClassError struct{ name string }

func (e *missingClassError) Error() string { return "DeviceClass " + e.name + " does not exist" }

// inGPUClass reports whether a device is selected by one of the GPU classes' selectors.
func (d *draState) inGPUClass(driver string, dev *resourceapi.Device) bool {
	for name := range d.gpuClasses {
		class := d.classes[name]
		if class == nil {
			continue
		}
		if d.selects(class.Spec.Selectors, driver, dev) {
			return true
		}
	}
	return false
}

// selects reports whether every CEL selector matches the device; one that fails to
// compile or evaluate matches nothing, as in the allocator.
func (d *draState) selects(sels []resourceapi.DeviceSelector, driver string, dev *resourceapi.Device) bool {
	for _, s := range sels {
		if s.CEL == nil {
			continue
		}
		expr := d.celCache.GetOrCompile(s.CEL.Expression)
		if expr.Error != nil {
			return false
		}
		ok, _, err := expr.DeviceMatches(context.Background(), cel.Device{Driver: driver, Attributes: dev.Attributes, Capacity: dev.Capacity})
		if err != nil || !ok {
			return false
		}
	}
	return true
}

// nodeDevices lists the GPUs a node publishes through DRA, in the order of their index
// attribute (else their name), numbered from 0 in that order.
func (d *draState) nodeDevices(node string) []draDevice {
	var out []draDevice
	var order []int64
	for _, s := range d.byNode[node] {
		for i := range s.Spec.Devices {
			dev := &s.Spec.Devices[i]
			if !d.inGPUClass(s.Spec.Driver, dev) {
				continue
			}
			// Handed out only whole, by claims (MIG's meaning to the core): a share of a
			// GPU is held by a reservation pod asking the device plugin, which a DRA
			// node does not run, so its node takes no fractions.
			g := bridge.GPU{UUID: attrString(s.Spec.Driver, dev, "uuid"), Model: attrString(s.Spec.Driver, dev, "productName"), MIG: true}
			if q, ok := dev.Capacity[resourceapi.QualifiedName("memory")]; ok {
				g.MemoryMiB = q.Value.Value() >> 20
			}
			idx := int64(len(order)) + 1<<32
			if a, ok := attr(s.Spec.Driver, dev, "index"); ok && a.IntValue != nil {
				idx = *a.IntValue
			}
			dd := draDevice{id: structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, dev.Name), gpu: g}
			if len(dev.ConsumesCounters) > 0 {
				dd.counters = dev.ConsumesCounters[0].CounterSet
			}
			out, order = append(out, dd), append(order, idx)
		}
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if order[a] != order[b] {
			if order[a] < order[b] {
				return -1
			}
			return 1
		}
		return compareIDs(out[a].id, out[b].id)
	})
	sorted := make([]draDevice, len(out))
	for i, k := range idx {
		sorted[i] = out[k]
		sorted[i].gpu.Index = int32(i)
	}
	return sorted
}

func compareIDs(a, b structured.DeviceID) int {
	if a.String() < b.String() {
		return -1
	}
	if a.String() > b.String() {
		return 1
	}
	return 0
}

// attr finds a device attribute by its name in the driver's domain (written plain or
// qualified).
func attr(driver string, dev *resourceapi.Device, name string) (resourceapi.DeviceAttribute, bool) {
	if a, ok := dev.Attributes[resourceapi.QualifiedName(name)]; ok {
		return a, true
	}
	a, ok := dev.Attributes[resourceapi.QualifiedName(driver+"/"+name)]
	return a, ok
}

func attrString(driver string, dev *resourceapi.Device, name string) string {
	a, ok := attr(driver, dev, name)
	switch {
	case !ok:
		return ""
	case a.StringValue != nil:
		return *a.StringValue
	case a.IntValue != nil:
		return strconv.FormatInt(*a.IntValue, 10)
	case a.VersionValue != nil:
		return *a.VersionValue
	}
	return ""
}

// allocatedDevices is every device allocated on a node (and in pools no one node has):
// the informer's claims', and this scheduler's own not yet seen there. Only the claims
// whose allocations use the node's pools are read (claimsByPool), so a node costs its
// own claims, not the cluster's.
func (d *draState) allocatedDevices(node string) (structured.AllocatedState, []*resourceapi.ResourceClaim) {
	state := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	var claims []*resourceapi.ResourceClaim
	add := func(c *resourceapi.ResourceClaim) {
		if c.Status.Allocation == nil {
			return
		}
		claims = append(claims, c)
		for _, r := range c.Status.Allocation.Devices.Results {
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID != nil {
				state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
				if r.ConsumedCapacity != nil {
					state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
				}
				continue
			}
			if r.AdminAccess != nil && *r.AdminAccess {
				continue // admin access does not take the device
			}
			state.AllocatedDevices.Insert(id)
		}
	}
	seen := map[string]bool{}
	pools := make([]string, 0, len(d.byNode[node])+len(d.sharedPools))
	for _, s := range d.byNode[node] {
		pools = append(pools, s.Spec.Driver+"/"+s.Spec.Pool.Name)
	}
	for p := range d.sharedPools {
		pools = append(pools, p)
	}
	for _, p := range pools {
		for key := range d.claimsByPool[p] {
			if !seen[key] && d.pending[key] == nil {
				seen[key] = true
				add(d.claim(key))
			}
		}
	}
	// Ours not seen back yet, and being written: few, read whole.
	for key := range d.inflight {
		if !seen[key] && d.pending[key] == nil {
			seen[key] = true
			add(d.claim(key))
		}
	}
	for _, c := range d.pending {
		add(c)
	}
	return state, claims
}

// indexClaim files a claim's allocation under the pools it uses (nil: drops the key).
func (d *draState) indexClaim(key string, old, now *resourceapi.ResourceClaim) {
	for _, c := range []*resourceapi.ResourceClaim{old} {
		if c == nil || c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			p := r.Driver + "/" + r.Pool
			delete(d.claimsByPool[p], key)
			if len(d.claimsByPool[p]) == 0 {
				delete(d.claimsByPool, p)
			}
		}
	}
	if now == nil || now.Status.Allocation == nil {
		return
	}
	for _, r := range now.Status.Allocation.Devices.Results {
		p := r.Driver + "/" + r.Pool
		if d.claimsByPool[p] == nil {
			d.claimsByPool[p] = map[string]bool{}
		}
		d.claimsByPool[p][key] = true
	}
}

// claim is the newest version known of a claim: the one this scheduler wrote, until the
// informer brings it or a later one (resource versions compared as numbers, as
// kube-scheduler's assume cache does); nil when none.
func (d *draState) claim(key string) *resourceapi.ResourceClaim {
	seen, ours := d.claims[key], d.inflight[key]
	if ours == nil {
		return seen
	}
	if seen != nil && !olderVersion(seen, ours) {
		delete(d.inflight, key) // the informer has caught up
		return seen
	}
	return ours
}

// olderVersion reports whether a is an older version of the object than b.
func olderVersion(a, b *resourceapi.ResourceClaim) bool {
	va, errA := strconv.ParseInt(a.ResourceVersion, 10, 64)
	vb, errB := strconv.ParseInt(b.ResourceVersion, 10, 64)
	return errA == nil && errB == nil && va < vb
}

// setSlice files a slice (nil: removes the one of that name) in the indexes.
func (d *draState) setSlice(name string, s *resourceapi.ResourceSlice) {
	if old := d.slices[name]; old != nil {
		if n := old.Spec.NodeName; n != nil {
			delete(d.byNode[*n], name)
			if len(d.byNode[*n]) == 0 {
				delete(d.byNode, *n)
			}
		}
		pool := old.Spec.Driver + "/" + old.Spec.Pool.Name
		delete(d.byPool[pool], name)
		if len(d.byPool[pool]) == 0 {
			delete(d.byPool, pool)
		}
		delete(d.slices, name)
	}
	if s == nil {
		return
	}
	d.slices[name] = s
	if n := s.Spec.NodeName; n != nil {
		if d.byNode[*n] == nil {
			d.byNode[*n] = map[string]*resourceapi.ResourceSlice{}
		}
		d.byNode[*n][name] = s
	}
	pool := s.Spec.Driver + "/" + s.Spec.Pool.Name
	if d.byPool[pool] == nil {
		d.byPool[pool] = map[string]*resourceapi.ResourceSlice{}
	}
	d.byPool[pool][name] = s
	if s.Spec.NodeName == nil {
		d.sharedPools[pool] = true
	}
}

// sliceList is every slice, for an allocator.
func (d *draState) sliceList() []*resourceapi.ResourceSlice {
	out := make([]*resourceapi.ResourceSlice, 0, len(d.slices))
	for _, s := range d.slices {
		out = append(out, s)
	}
	return out
}
