package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/remediation/health"
)

// simulatedNode is a node as the rig publishes it: no NVML, GPUs in the annotation.
func simulatedNode() *corev1.Node {
	var gpus []health.GPUInfo
	for i := range 4 {
		gpus = append(gpus, health.GPUInfo{Index: int32(i), UUID: "GPU-sim-" + itoa(i), Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, Healthy: true})
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sim-1", Annotations: map[string]string{health.GPUsAnnotation: health.FormatGPUs(gpus)}}}
}

// TestFaultInjectionOnSimulatedNode: without NVML but with a fault file, the node's GPUs
// come from its annotation, each injected fault raises its condition, and removing it heals.
func TestFaultInjectionOnSimulatedNode(t *testing.T) {
	tests := []struct {
		name   string
		faults string
		cond   health.ConditionType
		action health.Action
		gpu    int
	}{
		{"XID 79", `{"xids":[{"gpu":2,"xid":79}]}`, health.GPUXidError, health.ActionNodeReboot, 2},
		{"XID with driver reset", `{"xids":[{"gpu":0,"xid":13,"driverAction":1}]}`, health.GPUXidError, health.ActionGPUReset, 0},
		{"row remap pending", `{"gpus":[{"index":3,"rowRemapPending":true}]}`, health.GPURowRemapPending, health.ActionGPUReset, 3},
		{"row remap failure", `{"gpus":[{"index":1,"rowRemapFailure":true}]}`, health.GPURowRemapFailure, health.ActionHardwareRepair, 1},
		{"ECC", `{"gpus":[{"index":1,"volatileDBE":1}]}`, health.GPUMemoryECC, health.ActionGPUReset, 1},
		{"lost", `{"gpus":[{"index":0,"lost":true}]}`, health.GPULost, health.ActionNodeReboot, 0},
		{"NVLink down", `{"gpus":[{"index":2,"nvlinkDown":[3]}]}`, health.GPUNVLinkDegraded, health.ActionNodeReboot, 2},
		{"NVLink errors", `{"gpus":[{"index":2,"nvlinkErrors":5}]}`, health.GPUNVLinkDegraded, health.ActionGPUReset, 2},
		{"PCIe width", `{"gpus":[{"index":3,"pcieWidth":4}]}`, health.GPUPCIeDegraded, health.ActionGPUReset, 3},
		{"InfiniBand", `{"ibPortsDown":["mlx5_0/1"]}`, health.InfiniBandDegraded, health.ActionLinkService, -1},
		{"InfiniBand rate", `{"ibPortRates":{"mlx5_0/1":100}}`, health.InfiniBandDegraded, health.ActionLinkService, -1},
	}
	noDriver := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "faults.json")
			a, _ := testAgent(Config{NodeName: "sim-1", SysfsRoot: fakeIB(t, "mlx5_0/1"), FaultFile: file}, noDriver)
			node := simulatedNode()
			now := time.Now()
			assertAllFalse(t, "no fault file", first(a.assess(node, now)))
			if err := os.WriteFile(file, []byte(tt.faults), 0o644); err != nil {
				t.Fatal(err)
			}
			a.assess(node, now) // NVLink error growth needs a second poll
			conds, gpus := a.assess(node, now)
			c := conditionOf(conds, tt.cond)
			if c.Status != corev1.ConditionTrue || c.Reason != tt.action.Reason() {
				t.Fatalf("%s = %s/%s %q, want True/%s", tt.cond, c.Status, c.Reason, c.Message, tt.action.Reason())
			}
			if tt.gpu >= 0 && (!strings.Contains(c.Message, "GPU-sim-"+itoa(tt.gpu)) || gpus[tt.gpu].Healthy) {
				t.Errorf("GPU %d: message %q, healthy %v", tt.gpu, c.Message, gpus[tt.gpu].Healthy)
			}
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
			assertAllFalse(t, "fault file removed", first(a.assess(node, now)))
		})
	}
}

func TestFaultFileErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "faults.json")
	if err := os.WriteFile(file, []byte(`{"xids":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readFaults(file); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("malformed fault file: err = %v, want one naming the file", err)
	}
	if f, err := readFaults(filepath.Join(t.TempDir(), "none")); err != nil || len(f.XIDs)+len(f.GPUs)+len(f.IBPortsDown) != 0 {
		t.Errorf("missing fault file = %+v, %v; want no faults", f, err)
	}
}

func TestWriteFaultsRoundTrip(t *testing.T) {
	file := filepath.Join(t.TempDir(), "faults.json")
	want := Faults{XIDs: []InjectedXID{{GPU: 2, XID: 79}}, GPUs: []InjectedGPU{{Index: 3, RowRemapPending: true}}}
	if err := WriteFaults(file, &want); err != nil {
		t.Fatal(err)
	}
	got, err := readFaults(file)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v, %v; want %+v", got, err, want)
	}
	for range 2 { // healing twice is no error
		if err := WriteFaults(file, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("fault file still there after healing: %v", err)
	}
}

func TestReadIB(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, root string)
		want    []health.IBPort
		devices []health.IBDevice
		wantErr string
	}{
		{"two NDR ports", func(t *testing.T, root string) {
			setIBPort(t, root, "mlx5_0/1", "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)")
			setIBPort(t, root, "mlx5_1/1", "2: INIT", "7: Phy Test", "400 Gb/sec (4X NDR)")
		}, []health.IBPort{
			{Device: "mlx5_0", Port: "1", State: "ACTIVE", PhysState: "LinkUp", RateGbps: 400, LinkLayer: "InfiniBand"},
			{Device: "mlx5_1", Port: "1", State: "INIT", PhysState: "Phy Test", RateGbps: 400, LinkLayer: "InfiniBand"},
		}, []health.IBDevice{{Name: "mlx5_0"}, {Name: "mlx5_1"}}, ""},
		{"adapter model, PCIe link and counters", func(t *testing.T, root string) {
			writeSysfs(t, filepath.Join(root, "mlx5_0"), map[string]string{"hca_type": "MT4129"})
			setHCALink(t, root, "mlx5_0", "8", "8.0 GT/s PCIe")
			setIBPort(t, root, "mlx5_0/1", "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)")
			setIBCounters(t, root, "mlx5_0/1", 2, 31)
		}, []health.IBPort{
			{Device: "mlx5_0", Port: "1", State: "ACTIVE", PhysState: "LinkUp", RateGbps: 400, LinkLayer: "InfiniBand",
				Counters: &health.IBCounters{LinkDowned: 2, SymbolErrors: 31}},
		}, []health.IBDevice{{Name: "mlx5_0", HCAType: "MT4129",
			PCIe: health.PCIeLink{Width: 8, MaxWidth: 16, SpeedGTs: 8, MaxSpeedGTs: 16}}}, ""},
		{"unreadable rate", func(t *testing.T, root string) {
			setIBPort(t, root, "mlx5_0/1", "4: ACTIVE", "5: LinkUp", "fast")
		}, nil, nil, "rate"},
		{"missing state file", func(t *testing.T, root string) {
			setIBPort(t, root, "mlx5_0/1", "4: ACTIVE", "5: LinkUp", "400 Gb/sec")
			if err := os.Remove(filepath.Join(root, "mlx5_0", "ports", "1", "state")); err != nil {
				t.Fatal(err)
			}
		}, nil, nil, "state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.setup(t, root)
			got, devices, err := readIB(root)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one about %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("got %+v, %v", got, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ports = %s, want %s", show(got), show(tt.want))
			}
			if !reflect.DeepEqual(devices, tt.devices) {
				t.Errorf("adapters = %+v, want %+v", devices, tt.devices)
			}
		})
	}
	if ports, _, err := readIB(filepath.Join(t.TempDir(), "absent")); err != nil || len(ports) != 0 {
		t.Errorf("a node without InfiniBand: %v, %v; want no ports, no error", ports, err)
	}
}

// show prints ports with their counters rather than the counters' address.
func show(ports []health.IBPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%+v", p)
		if p.Counters != nil {
			fmt.Fprintf(&b, " counters %+v", *p.Counters)
		}
		b.WriteString("; ")
	}
	return b.String()
}
