package cluster_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

func TestParseSpecDRA(t *testing.T) {
	pool := "nodePools:\n  - {name: a, count: 3, cpu: '8', memory: 64Gi"
	gpus := ", gpusPerNode: 4, gpuModel: H100-80GB, gpuMemoryMiB: 81920"
	tests := []struct {
		name    string
		yaml    string
		wantErr []string // substrings, all required; none means valid
	}{
		{name: "dra pool with cliques and MIG", yaml: pool + gpus + ", dra: true, cliqueSize: 2, migMode: mixed}\n"},
		{name: "cliques on a device plugin pool", yaml: pool + gpus + ", cliqueSize: 2}\n"},
		{name: "dra without GPUs", yaml: pool + ", dra: true}\n", wantErr: []string{"nodePools[0] (a): dra: needs gpusPerNode > 0"}},
		{name: "dra on a real pool", yaml: "nodePools:\n  - {name: a, count: 1, real: true" + gpus + ", dra: true}\n"},
		{name: "MIG on a real dra pool", yaml: "nodePools:\n  - {name: a, count: 1, real: true" + gpus + ", dra: true, migMode: mixed}\n",
			wantErr: []string{"migMode: a real DRA pool offers whole GPUs only"}},
		{name: "negative clique size", yaml: pool + gpus + ", cliqueSize: -1}\n", wantErr: []string{"cliqueSize: must not be negative, got -1"}},
		{name: "cliques without GPUs", yaml: pool + ", cliqueSize: 2}\n", wantErr: []string{"cliqueSize: needs gpusPerNode > 0"}},
		{name: "clique name too long for a label", yaml: "nodePools:\n  - {name: " + strings.Repeat("p", 60) + ", count: 1, cpu: '8', memory: 64Gi" + gpus + ", cliqueSize: 1}\n",
			wantErr: []string{`cliqueSize: clique name "` + strings.Repeat("p", 60) + `-clique-0"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cluster.ParseSpec([]byte(tt.yaml))
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error containing %q, got none", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestDRANodes(t *testing.T) {
	spec := cluster.Spec{NodePools: []cluster.NodePool{
		{Name: "dra", Count: 3, GPUsPerNode: 4, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "64", Memory: "512Gi", DRA: true, CliqueSize: 2},
		{Name: "plugin", Count: 1, GPUsPerNode: 2, GPUModel: "A100-40GB", GPUMemoryMiB: 40960, CPU: "32", Memory: "256Gi", CliqueSize: 4},
	}}
	nodes, err := spec.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		node       string
		dra        bool
		wantClique string
	}{
		{"dra-0", true, "dra-clique-0"},
		{"dra-1", true, "dra-clique-0"},
		{"dra-2", true, "dra-clique-1"},
		{"plugin-0", false, "plugin-clique-0"},
	}
	if len(nodes) != len(tests) {
		t.Fatalf("%d nodes, want %d", len(nodes), len(tests))
	}
	for i, tt := range tests {
		n := nodes[i]
		if n.Name != tt.node {
			t.Fatalf("node %d is %s, want %s", i, n.Name, tt.node)
		}
		if got := n.Labels[cluster.LabelGPUClique]; got != tt.wantClique {
			t.Errorf("%s: label %s = %q, want %q", n.Name, cluster.LabelGPUClique, got, tt.wantClique)
		}
		for _, l := range []string{cluster.LabelGPUProduct, cluster.LabelGPUMemory, cluster.LabelGPUCount} {
			if n.Labels[l] == "" {
				t.Errorf("%s: no label %s: a DRA node keeps the GPU Operator's labels", n.Name, l)
			}
		}
		if q := n.Status.Allocatable[corev1.ResourceCPU]; q.IsZero() {
			t.Errorf("%s: no cpu", n.Name)
		}
		_, hasGPUs := n.Status.Capacity[cluster.ResourceGPU]
		_, hasAllocatable := n.Status.Allocatable[cluster.ResourceGPU]
		_, hasAnnotation := n.Annotations[cluster.AnnotationGPUs]
		if hasGPUs == tt.dra || hasAllocatable == tt.dra || hasAnnotation == tt.dra {
			t.Errorf("%s (dra %v): capacity %s %v, allocatable %v, annotation %s %v", n.Name, tt.dra,
				cluster.ResourceGPU, hasGPUs, hasAllocatable, cluster.AnnotationGPUs, hasAnnotation)
		}
	}
}

func TestDeviceClasses(t *testing.T) {
	want := map[string]string{cluster.DeviceClassGPU: `.type == "gpu"`, cluster.DeviceClassMIG: `.type == "mig"`}
	classes := cluster.DeviceClasses()
	if len(classes) != len(want) {
		t.Fatalf("%d classes, want %d", len(classes), len(want))
	}
	for _, c := range classes {
		sel := c.Spec.Selectors
		if len(sel) != 1 || sel[0].CEL == nil {
			t.Fatalf("class %s: selectors %+v, want one CEL selector", c.Name, sel)
		}
		expr := sel[0].CEL.Expression
		if !strings.Contains(expr, `device.driver == "gpu.nvidia.com"`) || !strings.Contains(expr, want[c.Name]) {
			t.Errorf("class %s selects %q", c.Name, expr)
		}
	}
}

var (
	gpuName = regexp.MustCompile(`^gpu-(\d+)$`)
	migName = regexp.MustCompile(`^gpu-(\d+)-mig-1g-[0-6]$`)
)

// TestResourceSlices checks each node's pool as the API server and the allocator would,
// and as NVIDIA's driver publishes it: every slice within the API's limits, the pool whole,
// one device per GPU and seven 1g MIG devices with MIG, and counters such that a GPU is
// either whole or in partitions.
func TestResourceSlices(t *testing.T) {
	h100 := cluster.NodePool{Name: "h100", Count: 2, GPUsPerNode: 4, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "64", Memory: "512Gi", DRA: true}
	with := func(p cluster.NodePool, change func(*cluster.NodePool)) cluster.NodePool { change(&p); return p }
	tests := []struct {
		name            string
		pool            cluster.NodePool
		wantSlices      int // per node
		wantCounterSets int // per node, in slices of their own
		wantArch        string
		wantProfile     string
	}{
		{name: "whole GPUs", pool: h100, wantSlices: 1, wantArch: "Hopper"},
		{name: "whole GPUs with cliques", pool: with(h100, func(p *cluster.NodePool) { p.CliqueSize = 1 }), wantSlices: 1, wantArch: "Hopper"},
		{name: "more GPUs than a slice holds", pool: with(h100, func(p *cluster.NodePool) { p.GPUsPerNode = 200 }), wantSlices: 2, wantArch: "Hopper"},
		{name: "MIG", pool: with(h100, func(p *cluster.NodePool) { p.MIGMode = "mixed" }), wantSlices: 2, wantCounterSets: 4, wantArch: "Hopper", wantProfile: "1g.10gb"},
		{name: "MIG, 8 GPUs fill one slice each", pool: with(h100, func(p *cluster.NodePool) { p.MIGMode = "single"; p.GPUsPerNode = 8 }),
			wantSlices: 2, wantCounterSets: 8, wantArch: "Hopper", wantProfile: "1g.10gb"},
		{name: "MIG, 9 GPUs need two of each", pool: with(h100, func(p *cluster.NodePool) { p.MIGMode = "mixed"; p.GPUsPerNode = 9; p.CliqueSize = 2 }),
			wantSlices: 4, wantCounterSets: 9, wantArch: "Hopper", wantProfile: "1g.10gb"},
		{name: "MIG none is whole GPUs", pool: with(h100, func(p *cluster.NodePool) { p.MIGMode = "none" }), wantSlices: 1, wantArch: "Hopper"},
		{name: "A100 40GB MIG", pool: with(h100, func(p *cluster.NodePool) { p.GPUModel = "A100-40GB"; p.GPUMemoryMiB = 40960; p.MIGMode = "mixed" }),
			wantSlices: 2, wantCounterSets: 4, wantArch: "Ampere", wantProfile: "1g.5gb"},
		{name: "unknown architecture", pool: with(h100, func(p *cluster.NodePool) { p.GPUModel = "L4"; p.GPUMemoryMiB = 23034 }), wantSlices: 1, wantArch: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := cluster.NodePool{Name: "plain", Count: 1, GPUsPerNode: 8, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "1", Memory: "1Gi"}
			spec := cluster.Spec{NodePools: []cluster.NodePool{tt.pool, other}}
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			byPool := map[string][]*resourcev1.ResourceSlice{}
			names := map[string]bool{}
			for _, s := range spec.ResourceSlices() {
				byPool[s.Spec.Pool.Name] = append(byPool[s.Spec.Pool.Name], s)
				if names[s.Name] {
					t.Errorf("slice name %s is not unique", s.Name)
				}
				names[s.Name] = true
				checkSliceLimits(t, s)
			}
			if len(byPool) != tt.pool.Count {
				t.Fatalf("%d pools, want one per node of the DRA pool (%d)", len(byPool), tt.pool.Count)
			}
			for i := range tt.pool.Count {
				node := cluster.NodeName(tt.pool.Name, i)
				checkPool(t, tt.pool, i, byPool[node], tt.wantSlices, tt.wantCounterSets, tt.wantArch, tt.wantProfile)
			}
		})
	}
}

// checkSliceLimits checks what the API server's validation of one slice does.
func checkSliceLimits(t *testing.T, s *resourcev1.ResourceSlice) {
	t.Helper()
	for _, msg := range validation.IsDNS1123Subdomain(s.Name) {
		t.Errorf("slice name %s: %s", s.Name, msg)
	}
	if s.Spec.Driver != cluster.DRADriver {
		t.Errorf("slice %s: driver %q", s.Name, s.Spec.Driver)
	}
	if len(s.Spec.Devices) > 0 && len(s.Spec.SharedCounters) > 0 {
		t.Errorf("slice %s has both devices and sharedCounters", s.Name)
	}
	if len(s.Spec.Devices) == 0 && len(s.Spec.SharedCounters) == 0 {
		t.Errorf("slice %s is empty", s.Name)
	}
	limit := resourcev1.ResourceSliceMaxDevices
	if slices.ContainsFunc(s.Spec.Devices, func(d resourcev1.Device) bool { return len(d.ConsumesCounters) > 0 }) {
		limit = resourcev1.ResourceSliceMaxDevicesWithAdvancedFeatures
	}
	if len(s.Spec.Devices) > limit {
		t.Errorf("slice %s: %d devices, at most %d", s.Name, len(s.Spec.Devices), limit)
	}
	if len(s.Spec.SharedCounters) > resourcev1.ResourceSliceMaxCounterSets {
		t.Errorf("slice %s: %d counter sets, at most %d", s.Name, len(s.Spec.SharedCounters), resourcev1.ResourceSliceMaxCounterSets)
	}
	for _, set := range s.Spec.SharedCounters {
		for _, msg := range validation.IsDNS1123Label(set.Name) {
			t.Errorf("counter set %s: %s", set.Name, msg)
		}
		if len(set.Counters) == 0 || len(set.Counters) > resourcev1.ResourceSliceMaxCountersPerCounterSet {
			t.Errorf("counter set %s: %d counters", set.Name, len(set.Counters))
		}
	}
	for _, d := range s.Spec.Devices {
		for _, msg := range validation.IsDNS1123Label(d.Name) {
			t.Errorf("device %s: %s", d.Name, msg)
		}
		if n := len(d.Attributes) + len(d.Capacity); n > resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
			t.Errorf("device %s: %d attributes and capacities", d.Name, n)
		}
		if len(d.ConsumesCounters) > resourcev1.ResourceSliceMaxDeviceCounterConsumptionsPerDevice {
			t.Errorf("device %s consumes from %d counter sets", d.Name, len(d.ConsumesCounters))
		}
		for name, a := range d.Attributes {
			if a.StringValue != nil && len(*a.StringValue) > resourcev1.DeviceAttributeMaxValueLength {
				t.Errorf("device %s: attribute %s too long", d.Name, name)
			}
		}
	}
}

// checkPool checks node i's pool: its slices agree on the pool, its devices and their
// attributes, and that its counters let a GPU be allocated whole or as up to seven MIG
// devices, never both.
func checkPool(t *testing.T, p cluster.NodePool, i int, pool []*resourcev1.ResourceSlice, wantSlices, wantCounterSets int, wantArch, wantProfile string) {
	t.Helper()
	node := cluster.NodeName(p.Name, i)
	if len(pool) != wantSlices {
		t.Errorf("%s: %d slices, want %d", node, len(pool), wantSlices)
	}
	sets := map[string]map[string]resource.Quantity{}
	var devices []resourcev1.Device
	for _, s := range pool {
		if ptr.Deref(s.Spec.NodeName, "") != node || s.Spec.Pool.Generation != pool[0].Spec.Pool.Generation || s.Spec.Pool.ResourceSliceCount != int64(len(pool)) {
			t.Errorf("slice %s: nodeName %v, pool %+v; want node %s, one generation, %d slices", s.Name, s.Spec.NodeName, s.Spec.Pool, node, len(pool))
		}
		for _, set := range s.Spec.SharedCounters {
			if sets[set.Name] != nil {
				t.Errorf("%s: counter set %s twice", node, set.Name)
			}
			sets[set.Name] = map[string]resource.Quantity{}
			for k, c := range set.Counters {
				sets[set.Name][k] = c.Value
			}
		}
		devices = append(devices, s.Spec.Devices...)
	}
	if len(sets) != wantCounterSets {
		t.Errorf("%s: %d counter sets, want %d", node, len(sets), wantCounterSets)
	}
	wantDevices := p.GPUsPerNode
	if wantCounterSets > 0 {
		wantDevices *= 1 + cluster.MIGSlicesPerGPU
	}
	if len(devices) != wantDevices {
		t.Errorf("%s: %d devices, want %d", node, len(devices), wantDevices)
	}
	clique := ""
	if p.CliqueSize > 0 {
		clique = fmt.Sprintf("%s-clique-%d", p.Name, i/p.CliqueSize)
	}
	// consumed[set] is what the GPU's whole device takes and what its MIG devices take.
	type use struct{ whole, migs map[string]resource.Quantity }
	consumed := map[string]*use{}
	seen := map[string]bool{}
	for _, d := range devices {
		if seen[d.Name] {
			t.Errorf("%s: device %s twice", node, d.Name)
		}
		seen[d.Name] = true
		attr := func(name string) resourcev1.DeviceAttribute { return d.Attributes[resourcev1.QualifiedName(name)] }
		str := func(name string) string { return ptr.Deref(attr(name).StringValue, "<unset>") }
		whole := gpuName.FindStringSubmatch(d.Name)
		mig := migName.FindStringSubmatch(d.Name)
		wantMemMiB := p.GPUMemoryMiB
		var gpu int
		switch {
		case whole != nil:
			gpu, _ = strconv.Atoi(whole[1])
			if str(cluster.DRAAttrType) != cluster.DRATypeGPU || str(cluster.DRAAttrUUID) != cluster.GPUUUID(node, gpu) {
				t.Errorf("%s/%s: type %s, uuid %s", node, d.Name, str(cluster.DRAAttrType), str(cluster.DRAAttrUUID))
			}
		case mig != nil && wantCounterSets > 0:
			gpu, _ = strconv.Atoi(mig[1])
			wantMemMiB /= cluster.MIGSlicesPerGPU
			if str(cluster.DRAAttrType) != cluster.DRATypeMIG || str(cluster.DRAAttrParentUUID) != cluster.GPUUUID(node, gpu) || str(cluster.DRAAttrProfile) != wantProfile {
				t.Errorf("%s/%s: type %s, parentUUID %s, profile %s (want %s)", node, d.Name, str(cluster.DRAAttrType), str(cluster.DRAAttrParentUUID), str(cluster.DRAAttrProfile), wantProfile)
			}
		default:
			t.Errorf("%s: unexpected device %s", node, d.Name)
			continue
		}
		if gpu >= p.GPUsPerNode || ptr.Deref(attr(cluster.DRAAttrIndex).IntValue, -1) != int64(gpu) {
			t.Errorf("%s/%s: index %v", node, d.Name, attr(cluster.DRAAttrIndex).IntValue)
		}
		if str(cluster.DRAAttrProductName) != p.GPUModel || str(cluster.DRAAttrArchitecture) != wantArch ||
			ptr.Deref(attr(cluster.DRAAttrDriverVersion).VersionValue, "") != cluster.DRADriverVersion {
			t.Errorf("%s/%s: productName %s, architecture %s, driverVersion %v", node, d.Name, str(cluster.DRAAttrProductName),
				str(cluster.DRAAttrArchitecture), attr(cluster.DRAAttrDriverVersion).VersionValue)
		}
		if got := ptr.Deref(attr(cluster.DRAAttrCliqueID).StringValue, ""); got != clique {
			t.Errorf("%s/%s: cliqueID %q, want %q", node, d.Name, got, clique)
		}
		if mem := d.Capacity[cluster.DRACapacityMemory].Value; mem.Value() != int64(wantMemMiB)<<20 {
			t.Errorf("%s/%s: memory %s, want %dMi", node, d.Name, mem.String(), wantMemMiB)
		}
		if wantCounterSets == 0 {
			if len(d.ConsumesCounters) != 0 {
				t.Errorf("%s/%s consumes counters without MIG", node, d.Name)
			}
			continue
		}
		if len(d.ConsumesCounters) != 1 || d.ConsumesCounters[0].CounterSet != cluster.CounterSetName(gpu) {
			t.Errorf("%s/%s: consumes %+v, want from %s only", node, d.Name, d.ConsumesCounters, cluster.CounterSetName(gpu))
			continue
		}
		set := d.ConsumesCounters[0].CounterSet
		if consumed[set] == nil {
			consumed[set] = &use{whole: map[string]resource.Quantity{}, migs: map[string]resource.Quantity{}}
		}
		for k, c := range d.ConsumesCounters[0].Counters {
			if _, ok := sets[set][k]; !ok {
				t.Errorf("%s/%s: consumes counter %s that set %s lacks", node, d.Name, k, set)
			}
			into := consumed[set].migs
			if whole != nil {
				into = consumed[set].whole
			}
			sum := into[k]
			sum.Add(c.Value)
			into[k] = sum
		}
	}
	for set, u := range consumed {
		for k, have := range sets[set] {
			w, m := u.whole[k], u.migs[k]
			if w.Cmp(have) != 0 {
				t.Errorf("%s: the whole GPU takes %s of %s's %s, want all %s", node, w.String(), set, k, have.String())
			}
			if m.Cmp(have) > 0 {
				t.Errorf("%s: its MIG devices take %s of %s's %s, more than %s", node, m.String(), set, k, have.String())
			}
		}
		if s := sets[set][cluster.DRACounterSlices]; s.Value() != cluster.MIGSlicesPerGPU {
			t.Errorf("%s: set %s has %s slices, want %d", node, set, s.String(), cluster.MIGSlicesPerGPU)
		}
		if m := sets[set][cluster.DRACounterMemory]; m.Value() != int64(p.GPUMemoryMiB)<<20 {
			t.Errorf("%s: set %s has %s memory, want %dMi", node, set, m.String(), p.GPUMemoryMiB)
		}
	}
	if len(consumed) != wantCounterSets {
		t.Errorf("%s: devices consume from %d counter sets, want %d", node, len(consumed), wantCounterSets)
	}
}

// TestKubeSchedulerAllocatesDRADevices proves the stand-in driver by what kube-scheduler's
// DynamicResources plugin does with its slices and classes: it allocates a claim's GPUs on
// a DRA node, leaves a claim no node can satisfy pending as unschedulable, and through the
// shared counters never gives out a GPU both whole and as MIG partitions.
func TestKubeSchedulerAllocatesDRADevices(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a rig")
	}
	spec := cluster.Spec{NodePools: []cluster.NodePool{
		{Name: "dra", Count: 2, GPUsPerNode: 4, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "64", Memory: "512Gi", MIGMode: "mixed", DRA: true, CliqueSize: 2},
		{Name: "plain", Count: 1, GPUsPerNode: 8, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "64", Memory: "512Gi"},
	}}
	c, err := cluster.Start(context.Background(), cluster.Options{Spec: spec, Dir: t.TempDir(), Log: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Stop()
		if err := c.Leftovers(); err != nil {
			t.Errorf("leftovers: %v", err)
		}
	}()
	ctx := context.Background()
	client := c.Client()
	list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourcev1.ResourceSliceSelectorDriver + "=" + cluster.DRADriver})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(spec.ResourceSlices()); len(list.Items) != want {
		t.Fatalf("%d ResourceSlices published, want %d", len(list.Items), want)
	}

	for name, n := range map[string]int{"one-gpu": 1, "two-gpus": 2, "four-gpus": 4, "five-gpus": 5} {
		createClaimTemplate(t, client, name, cluster.DeviceClassGPU, n)
	}
	createClaimTemplate(t, client, "one-mig", cluster.DeviceClassMIG, 1)

	// Two GPUs, anywhere: kube-scheduler finds them on a DRA node, not on the plain one.
	first, got := scheduled(t, client, "two", "two-gpus", "")
	if !strings.HasPrefix(first, "dra-") || len(got) != 2 || !gpuName.MatchString(got[0]) || !gpuName.MatchString(got[1]) || got[0] == got[1] {
		t.Fatalf("two GPUs: allocated %v on %s, want two gpu-N devices of a dra node", got, first)
	}
	second := "dra-0"
	if first == second {
		second = "dra-1"
	}

	// Five GPUs: no node has them.
	unschedulable(t, client, "five", "five-gpus", "")

	// All four GPUs of the other node whole: none of its MIG devices is left.
	if _, got := scheduled(t, client, "four", "four-gpus", second); len(got) != 4 {
		t.Fatalf("four GPUs on %s: allocated %v", second, got)
	}
	unschedulable(t, client, "mig-on-full", "one-mig", second)

	// A MIG device on one of the first node's two free GPUs: then one GPU is left whole, not two.
	_, mig := scheduled(t, client, "mig", "one-mig", first)
	if len(mig) != 1 || !migName.MatchString(mig[0]) {
		t.Fatalf("MIG claim on %s: allocated %v, want one MIG device", first, mig)
	}
	migGPU := migName.FindStringSubmatch(mig[0])[1]
	if slices.Contains(got, "gpu-"+migGPU) {
		t.Errorf("MIG device %s is on a GPU allocated whole (%v)", mig[0], got)
	}
	unschedulable(t, client, "two-after-mig", "two-gpus", first)
	_, last := scheduled(t, client, "last", "one-gpu", first)
	if len(last) != 1 || slices.Contains(got, last[0]) || last[0] == "gpu-"+migGPU {
		t.Errorf("the last whole GPU of %s: allocated %v, with %v whole and %s partitioned", first, last, got, mig[0])
	}
}

// allocateTimeout bounds one pod's scheduling on a loaded machine.
const allocateTimeout = 2 * time.Minute

func createClaimTemplate(t *testing.T, client kubernetes.Interface, name, class string, count int) {
	t.Helper()
	tmpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: int64(count)}}},
		}}},
	}
	if _, err := client.ResourceV1().ResourceClaimTemplates(metav1.NamespaceDefault).Create(context.Background(), tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createClaimPod creates a pod for kube-scheduler whose claim comes from template, on node
// when it is not "".
func createClaimPod(t *testing.T, client kubernetes.Interface, name, template, node string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			SchedulerName:  corev1.DefaultSchedulerName,
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To(template)}},
			Containers: []corev1.Container{{Name: "main", Image: "busybox",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}}}}},
		},
	}
	if node != "" {
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	}
	if _, err := client.CoreV1().Pods(metav1.NamespaceDefault).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// scheduled creates the pod, waits for kube-scheduler to bind it, and returns its node and
// the devices its claim was allocated there.
func scheduled(t *testing.T, client kubernetes.Interface, name, template, node string) (string, []string) {
	t.Helper()
	createClaimPod(t, client, name, template, node)
	var bound string
	var devices []string
	e2e.WaitFor(t, "pod "+name+" bound with its claim allocated", allocateTimeout, func(ctx context.Context) (bool, error) {
		pod, err := client.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
		if err != nil || pod.Spec.NodeName == "" {
			return false, err
		}
		claim, err := podClaim(ctx, client, pod)
		if err != nil {
			return false, err
		}
		if claim.Status.Allocation == nil {
			return false, fmt.Errorf("pod on %s, claim %s not allocated", pod.Spec.NodeName, claim.Name)
		}
		bound, devices = pod.Spec.NodeName, nil
		for _, r := range claim.Status.Allocation.Devices.Results {
			if r.Driver != cluster.DRADriver || r.Pool != bound {
				t.Errorf("pod %s on %s: device %s/%s/%s", name, bound, r.Driver, r.Pool, r.Device)
			}
			devices = append(devices, r.Device)
		}
		return true, nil
	})
	if node != "" && bound != node {
		t.Errorf("pod %s on %s, want %s", name, bound, node)
	}
	slices.Sort(devices)
	t.Logf("pod %s on %s: %v", name, bound, devices)
	return bound, devices
}

// unschedulable creates the pod and waits for kube-scheduler to find no node whose devices
// satisfy its claim; the claim stays unallocated.
func unschedulable(t *testing.T, client kubernetes.Interface, name, template, node string) {
	t.Helper()
	createClaimPod(t, client, name, template, node)
	e2e.WaitFor(t, "pod "+name+" unschedulable for its claim", allocateTimeout, func(ctx context.Context) (bool, error) {
		pod, err := client.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if pod.Spec.NodeName != "" {
			t.Fatalf("pod %s was bound to %s", name, pod.Spec.NodeName)
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable &&
				strings.Contains(cond.Message, "cannot allocate all claims") {
				claim, err := podClaim(ctx, client, pod)
				if err != nil {
					return false, err
				}
				if claim.Status.Allocation != nil {
					t.Fatalf("pod %s is unschedulable but its claim %s is allocated: %+v", name, claim.Name, claim.Status.Allocation)
				}
				t.Logf("pod %s: %s", name, cond.Message)
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", pod.Status.Conditions)
	})
}

// podClaim is the ResourceClaim kube-controller-manager made for the pod from its template.
func podClaim(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) (*resourcev1.ResourceClaim, error) {
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			return client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, *s.ResourceClaimName, metav1.GetOptions{})
		}
	}
	return nil, fmt.Errorf("pod %s: no claim made from its template yet", pod.Name)
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
