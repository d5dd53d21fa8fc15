package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/sluicehq/sluice/remediation/health"
)

// fakeIB writes a sysfs InfiniBand tree as a ConnectX-6 node shows it: each adapter
// (hca_type MT4123) on a PCIe Gen4 x16 link, each port a healthy 200 Gb/s HDR link with
// its error counters. It returns the tree's root.
func fakeIB(t *testing.T, ports ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range ports {
		dev, _, _ := strings.Cut(p, "/")
		writeSysfs(t, filepath.Join(root, dev), map[string]string{"hca_type": "MT4123"})
		setHCALink(t, root, dev, "16", "16.0 GT/s PCIe")
		setIBPort(t, root, p, "4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)")
		setIBCounters(t, root, p, 0, 0)
	}
	return root
}

func setIBPort(t *testing.T, root, name, state, phys, rate string) {
	t.Helper()
	dev, port, _ := strings.Cut(name, "/")
	writeSysfs(t, filepath.Join(root, dev, "ports", port),
		map[string]string{"state": state, "phys_state": phys, "rate": rate, "link_layer": "InfiniBand"})
}

func setIBCounters(t *testing.T, root, name string, linkDowned, symbolErrors int) {
	t.Helper()
	dev, port, _ := strings.Cut(name, "/")
	writeSysfs(t, filepath.Join(root, dev, "ports", port, "counters"),
		map[string]string{"link_downed": itoa(linkDowned), "symbol_error": itoa(symbolErrors)})
}

// setHCALink sets the adapter's current PCIe link; its maximum is x16 at 16 GT/s.
func setHCALink(t *testing.T, root, dev, width, speed string) {
	t.Helper()
	writeSysfs(t, filepath.Join(root, dev, "device"), map[string]string{
		"current_link_width": width, "max_link_width": "16",
		"current_link_speed": speed, "max_link_speed": "16.0 GT/s PCIe"})
}

func writeSysfs(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for file, v := range files {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func testAgent(cfg Config, lib nvml.Interface) (*agent, *record.FakeRecorder) {
	rec := record.NewFakeRecorder(100)
	cfg.NVML = lib
	return newAgent(cfg, &eventWriter{recorder: rec, node: &corev1.ObjectReference{Kind: "Node", Name: cfg.NodeName}}), rec
}

func conditionOf(conds []corev1.NodeCondition, t health.ConditionType) corev1.NodeCondition {
	for _, c := range conds {
		if string(c.Type) == string(t) {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func assertAllFalse(t *testing.T, when string, conds []corev1.NodeCondition) {
	t.Helper()
	if len(conds) != len(health.FaultConditions) {
		t.Fatalf("%s: %d conditions, want %d", when, len(conds), len(health.FaultConditions))
	}
	for _, c := range conds {
		if c.Status != corev1.ConditionFalse {
			t.Errorf("%s: %s = %s (%s), want False", when, c.Type, c.Status, c.Message)
		}
	}
}

// TestAgentFaultClasses drives the agent through go-nvml's DGX A100 mock and a fake sysfs
// tree: healthy, then one fault class, then healed. Each must raise exactly its condition,
// name the GPU's UUID, mark only that GPU unhealthy, and clear. The agent runs with the
// default configuration (no InfiniBand port count or rate table): the InfiniBand checks
// are on without one.
func TestAgentFaultClasses(t *testing.T) {
	tests := []struct {
		name   string
		gpu    int // -1: node-wide
		breaks func(st *gpuState, ibRoot string)
		heals  func(st *gpuState, ibRoot string)
		cond   health.ConditionType
		action health.Action
	}{
		{"NVLink down", 2, func(st *gpuState, _ string) { st.linkDown[7] = true }, func(st *gpuState, _ string) { st.linkDown[7] = false },
			health.GPUNVLinkDegraded, health.ActionNodeReboot},
		{"NVLink errors growing", 5, func(st *gpuState, _ string) { st.linkErrors += 40 }, func(*gpuState, string) {},
			health.GPUNVLinkDegraded, health.ActionGPUReset},
		{"PCIe width below max", 1, func(st *gpuState, _ string) { st.width = 8 }, func(st *gpuState, _ string) { st.width = 16 },
			health.GPUPCIeDegraded, health.ActionGPUReset},
		{"PCIe generation below max while busy", 6, func(st *gpuState, _ string) { st.gen = 1 }, func(st *gpuState, _ string) { st.gen = 4 },
			health.GPUPCIeDegraded, health.ActionGPUReset},
		{"row remap pending", 3, func(st *gpuState, _ string) { st.pending = true }, func(st *gpuState, _ string) { st.pending = false },
			health.GPURowRemapPending, health.ActionGPUReset},
		{"row remap failure", 4, func(st *gpuState, _ string) { st.failure = true }, func(st *gpuState, _ string) { st.failure = false },
			health.GPURowRemapFailure, health.ActionHardwareRepair},
		{"volatile double-bit ECC", 0, func(st *gpuState, _ string) { st.dbe = 3 }, func(st *gpuState, _ string) { st.dbe = 0 },
			health.GPUMemoryECC, health.ActionGPUReset},
		{"GPU lost", 7, func(st *gpuState, _ string) { st.lost = true }, func(st *gpuState, _ string) { st.lost = false },
			health.GPULost, health.ActionNodeReboot},
		{"InfiniBand port down", -1, func(_ *gpuState, root string) {
			setIBPort(t, root, "mlx5_1/1", "1: DOWN", "3: Disabled", "10 Gb/sec (4X SDR)")
		}, func(_ *gpuState, root string) {
			setIBPort(t, root, "mlx5_1/1", "4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)")
		}, health.InfiniBandDegraded, health.ActionLinkService},
		{"InfiniBand 200 Gb/s port running at 100", -1, func(_ *gpuState, root string) {
			setIBPort(t, root, "mlx5_0/1", "4: ACTIVE", "5: LinkUp", "100 Gb/sec (4X EDR)")
		}, func(_ *gpuState, root string) {
			setIBPort(t, root, "mlx5_0/1", "4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)")
		}, health.InfiniBandDegraded, health.ActionLinkService},
		{"InfiniBand link retrained", -1, func(_ *gpuState, root string) {
			setIBCounters(t, root, "mlx5_1/1", 1, 0)
		}, func(*gpuState, string) {}, health.InfiniBandDegraded, health.ActionLinkService},
		{"InfiniBand symbol errors", -1, func(_ *gpuState, root string) {
			setIBCounters(t, root, "mlx5_1/1", 0, 500)
		}, func(*gpuState, string) {}, health.InfiniBandDegraded, health.ActionLinkService},
		{"InfiniBand adapter's PCIe link narrower", -1, func(_ *gpuState, root string) {
			setHCALink(t, root, "mlx5_0", "8", "16.0 GT/s PCIe")
		}, func(_ *gpuState, root string) {
			setHCALink(t, root, "mlx5_0", "16", "16.0 GT/s PCIe")
		}, health.InfiniBandDegraded, health.ActionLinkService},
		{"InfiniBand port gone", -1, func(_ *gpuState, root string) {
			if err := os.RemoveAll(filepath.Join(root, "mlx5_1")); err != nil {
				t.Fatal(err)
			}
		}, func(_ *gpuState, root string) {
			writeSysfs(t, filepath.Join(root, "mlx5_1"), map[string]string{"hca_type": "MT4123"})
			setIBPort(t, root, "mlx5_1/1", "4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)")
		}, health.InfiniBandDegraded, health.ActionLinkService},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib, states := newDGX()
			root := fakeIB(t, "mlx5_0/1", "mlx5_1/1")
			cfg, err := Config{NodeName: "gpu-1", SysfsRoot: root, RESTConfig: &rest.Config{}}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			a, _ := testAgent(cfg, lib)
			node := &corev1.Node{}
			now := time.Unix(1700000000, 0)
			conds, gpus := a.assess(node, now)
			assertAllFalse(t, "healthy", conds)
			if len(gpus) != 8 || gpus[0].UUID == "" || gpus[0].Model == "" || gpus[0].MemoryMiB != 40960 {
				t.Fatalf("inventory %+v, want 8 A100-40GB with UUIDs", gpus)
			}

			st := states[max(tt.gpu, 0)]
			tt.breaks(st, root)
			conds, gpus = a.assess(node, now)
			c := conditionOf(conds, tt.cond)
			if c.Status != corev1.ConditionTrue || c.Reason != tt.action.Reason() {
				t.Fatalf("%s = %s/%s %q, want True/%s", tt.cond, c.Status, c.Reason, c.Message, tt.action.Reason())
			}
			if tt.gpu >= 0 && !strings.Contains(c.Message, gpus[tt.gpu].UUID) {
				t.Errorf("message %q does not name %s", c.Message, gpus[tt.gpu].UUID)
			}
			for _, g := range gpus {
				if g.Healthy == (int(g.Index) == tt.gpu) {
					t.Errorf("GPU %d healthy=%v, fault on GPU %d", g.Index, g.Healthy, tt.gpu)
				}
			}
			for _, other := range conds {
				if other.Type != c.Type && other.Status != corev1.ConditionFalse {
					t.Errorf("unrelated %s = %s (%s)", other.Type, other.Status, other.Message)
				}
			}

			tt.heals(st, root)
			conds, gpus = a.assess(node, now)
			assertAllFalse(t, "healed", conds)
			if gpus[max(tt.gpu, 0)].UUID != states[0].uuidOf(lib, max(tt.gpu, 0)) {
				t.Errorf("GPU identity changed across a fault")
			}
		})
	}
}

func (*gpuState) uuidOf(lib nvml.Interface, i int) string {
	d, _ := lib.DeviceGetHandleByIndex(i)
	u, _ := d.GetUUID()
	return u
}

func TestAgentGPUMissingFromBus(t *testing.T) {
	lib, _ := newDGX()
	a, _ := testAgent(Config{NodeName: "gpu-1", SysfsRoot: t.TempDir()}, lib)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"nvidia.com/gpu.count": "8"}}}
	_, gpus := a.assess(node, time.Now())
	node.Annotations = map[string]string{health.GPUsAnnotation: health.FormatGPUs(gpus)}
	lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	conds, after := a.assess(node, time.Now())
	c := conditionOf(conds, health.GPULost)
	if c.Status != corev1.ConditionTrue || !strings.Contains(c.Message, gpus[7].UUID) {
		t.Fatalf("GPULost = %s %q, want True naming %s", c.Status, c.Message, gpus[7].UUID)
	}
	if len(after) != 8 || after[7].Healthy || after[7].UUID != gpus[7].UUID {
		t.Errorf("missing GPU must stay in the inventory, unhealthy, under its UUID: %+v", after[7])
	}
}

func TestAgentWithoutNVML(t *testing.T) {
	noDriver := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	a, _ := testAgent(Config{NodeName: "cpu-1", SysfsRoot: filepath.Join(t.TempDir(), "absent")}, noDriver)
	conds, gpus := a.assess(&corev1.Node{}, time.Now())
	for _, c := range conds {
		if c.Type == corev1.NodeConditionType(health.InfiniBandDegraded) {
			if c.Status != corev1.ConditionFalse {
				t.Errorf("no InfiniBand and none expected: %s = %s", c.Type, c.Status)
			}
			continue
		}
		if c.Status != corev1.ConditionUnknown || !strings.Contains(c.Message, "ERROR_LIBRARY_NOT_FOUND") && !strings.Contains(c.Message, "not found") {
			t.Errorf("%s = %s %q, want Unknown saying NVML is missing", c.Type, c.Status, c.Message)
		}
	}
	if len(gpus) != 0 {
		t.Errorf("no GPUs can be listed without NVML, got %+v", gpus)
	}
}

// TestAgentRealLibraryAbsent runs the real go-nvml loader: on a machine without the NVIDIA
// driver the agent must report, not crash.
func TestAgentRealLibraryAbsent(t *testing.T) {
	if nvml.New().Init() == nvml.SUCCESS {
		t.Skip("this machine has NVML")
	}
	a, _ := testAgent(Config{NodeName: "cpu-1", SysfsRoot: t.TempDir()}, nil)
	if c := conditionOf(func() []corev1.NodeCondition { c, _ := a.assess(&corev1.Node{}, time.Now()); return c }(), health.GPUXidError); c.Status != corev1.ConditionUnknown {
		t.Errorf("GPUXidError = %s, want Unknown", c.Status)
	}
}
