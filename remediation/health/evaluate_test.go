package health

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func healthyGPU(i int) GPUReading {
	return GPUReading{
		Index: i, UUID: "GPU-" + itoa(i), Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559,
		NVLinks: []NVLinkReading{{Link: 0, Up: true, Errors: 5}, {Link: 1, Up: true}},
		PCIe:    PCIeReading{Width: 16, MaxWidth: 16, Gen: 5, MaxGen: 5, Busy: true},
	}
}

func healthyIB() []IBPort {
	return []IBPort{
		{Device: "mlx5_0", Port: "1", State: "ACTIVE", PhysState: "LinkUp", RateGbps: 400},
		{Device: "mlx5_1", Port: "1", State: "ACTIVE", PhysState: "LinkUp", RateGbps: 400},
	}
}

func healthyNode() Readings {
	return Readings{GPUs: []GPUReading{healthyGPU(0), healthyGPU(1)}, IBPorts: healthyIB()}
}

var expect = Expectations{IBPorts: 2, IBRateGbps: 400}

// TestEvaluateEachFaultClass breaks one thing per case and checks that exactly its
// condition turns True with the expected reason and a message naming the GPU, that the
// faulty GPU (and only it) is unhealthy, and that the healthy readings clear it again.
func TestEvaluateEachFaultClass(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(r *Readings)
		cond    ConditionType
		action  Action
		badGPU  int // -1: no GPU named
		mention string
	}{
		{"critical XID", func(r *Readings) {
			r.XIDs = []XIDRecord{{GPU: 1, UUID: "GPU-1", XID: 79, Driver: DriverActionUnknown}}
		}, GPUXidError, ActionNodeReboot, 1, "XID 79"},
		{"XID with driver reset action", func(r *Readings) {
			r.XIDs = []XIDRecord{{GPU: 0, UUID: "GPU-0", XID: 119, Driver: DriverActionGPUReset}}
		}, GPUXidError, ActionGPUReset, 0, "XID 119"},
		{"NVLink down", func(r *Readings) { r.GPUs[1].NVLinks[1].Up = false }, GPUNVLinkDegraded, ActionNodeReboot, 1, "NVLink 1 down"},
		{"NVLink errors growing", func(r *Readings) { r.GPUs[0].NVLinks[0].Errors = 9 }, GPUNVLinkDegraded, ActionGPUReset, 0, "errors grew 5 -> 9"},
		{"PCIe width below max", func(r *Readings) { r.GPUs[0].PCIe.Width = 8 }, GPUPCIeDegraded, ActionGPUReset, 0, "x8 below x16"},
		{"PCIe generation below max while busy", func(r *Readings) { r.GPUs[1].PCIe.Gen = 3 }, GPUPCIeDegraded, ActionGPUReset, 1, "Gen3 below Gen5"},
		{"row remap pending", func(r *Readings) { r.GPUs[0].RowRemapPending = true }, GPURowRemapPending, ActionGPUReset, 0, "row remap pending"},
		{"row remap failure", func(r *Readings) { r.GPUs[1].RowRemapFailure = true }, GPURowRemapFailure, ActionHardwareRepair, 1, "row remapping failed"},
		{"volatile double-bit ECC", func(r *Readings) { r.GPUs[0].VolatileDBE = 2 }, GPUMemoryECC, ActionGPUReset, 0, "2 volatile double-bit"},
		{"GPU lost", func(r *Readings) { r.GPUs[1] = GPUReading{Index: 1, UUID: "GPU-1", Lost: true} }, GPULost, ActionNodeReboot, 1, "lost"},
		{"IB port down", func(r *Readings) { r.IBPorts[0].State = "DOWN" }, InfiniBandDegraded, ActionLinkService, -1, "mlx5_0/1 state DOWN"},
		{"IB physical link polling", func(r *Readings) { r.IBPorts[1].PhysState = "Polling" }, InfiniBandDegraded, ActionLinkService, -1, "physical state Polling"},
		{"IB rate low", func(r *Readings) { r.IBPorts[1].RateGbps = 200 }, InfiniBandDegraded, ActionLinkService, -1, "rate 200 Gb/s below 400"},
		{"IB port missing", func(r *Readings) { r.IBPorts = r.IBPorts[:1] }, InfiniBandDegraded, ActionLinkService, -1, "1 of 2"},
	}
	now := time.Unix(1700000000, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := healthyNode()
			cur := healthyNode()
			tt.breakIt(&cur)
			findings := Evaluate(&prev, cur, expect)
			for _, c := range Conditions(cur, findings, now) {
				if string(c.Type) != string(tt.cond) {
					if c.Status != corev1.ConditionFalse {
						t.Errorf("%s = %s (%s), want False", c.Type, c.Status, c.Message)
					}
					continue
				}
				if c.Status != corev1.ConditionTrue || c.Reason != tt.action.Reason() {
					t.Errorf("%s = %s/%s, want True/%s", c.Type, c.Status, c.Reason, tt.action.Reason())
				}
				if !strings.Contains(c.Message, tt.mention) || !strings.Contains(c.Message, tt.action.Advice()) {
					t.Errorf("message %q lacks %q or the advice", c.Message, tt.mention)
				}
				if tt.badGPU >= 0 && !strings.Contains(c.Message, "GPU-"+itoa(tt.badGPU)) {
					t.Errorf("message %q does not name GPU-%d", c.Message, tt.badGPU)
				}
			}
			for _, g := range GPUHealth(cur, findings) {
				if g.Healthy == (int(g.Index) == tt.badGPU) {
					t.Errorf("GPU %d healthy=%v with fault on GPU %d", g.Index, g.Healthy, tt.badGPU)
				}
			}
			// The next poll is healthy again: every condition clears.
			healed := healthyNode()
			healed.GPUs[0].NVLinks[0].Errors = cur.GPUs[0].NVLinks[0].Errors
			for _, c := range Conditions(healed, Evaluate(&cur, healed, expect), now) {
				if c.Status != corev1.ConditionFalse || c.Reason != ReasonHealthy {
					t.Errorf("after healing %s = %s (%s)", c.Type, c.Status, c.Message)
				}
			}
		})
	}
}

func TestEvaluateJudgesOnlyWhatItCan(t *testing.T) {
	tests := []struct {
		name string
		r    Readings
		prev *Readings
	}{
		{"idle GPU may downclock its PCIe generation", func() Readings {
			r := healthyNode()
			r.GPUs[0].PCIe.Gen, r.GPUs[0].PCIe.Busy = 1, false
			return r
		}(), nil},
		{"first poll has no counter growth", healthyNode(), nil},
		{"unreported PCIe values are not judged", func() Readings {
			r := healthyNode()
			r.GPUs[0].PCIe = PCIeReading{}
			return r
		}(), nil},
		{"application XID held by mistake raises nothing", func() Readings {
			r := healthyNode()
			r.XIDs = []XIDRecord{{GPU: 0, UUID: "GPU-0", XID: 13, Driver: DriverActionUnknown}}
			return r
		}(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f := Evaluate(tt.prev, tt.r, expect); len(f) != 0 {
				t.Errorf("findings %+v, want none", f)
			}
		})
	}
}

func TestConditionsUnknownWithoutSources(t *testing.T) {
	r := Readings{NVMLError: "libnvidia-ml.so.1 not found", IBError: "open /sys/class/infiniband: no such file"}
	for _, c := range Conditions(r, nil, time.Now()) {
		want := ReasonNVMLUnavailable
		if string(c.Type) == string(InfiniBandDegraded) {
			want = ReasonSysfsUnavailable
		}
		if c.Status != corev1.ConditionUnknown || c.Reason != want || c.Message == "" {
			t.Errorf("%s = %s/%s %q, want Unknown/%s with a message", c.Type, c.Status, c.Reason, c.Message, want)
		}
	}
}

func TestConditionsPickMostSevereAction(t *testing.T) {
	r := healthyNode()
	r.GPUs[0].NVLinks[0].Errors = 10
	r.GPUs[1].NVLinks[0].Up = false
	prev := healthyNode()
	for _, c := range Conditions(r, Evaluate(&prev, r, expect), time.Now()) {
		if string(c.Type) == string(GPUNVLinkDegraded) {
			if c.Reason != ActionNodeReboot.Reason() || !strings.Contains(c.Message, "GPU-0") || !strings.Contains(c.Message, "GPU-1") {
				t.Errorf("got %s %q, want NodeRebootRequired naming both GPUs", c.Reason, c.Message)
			}
		}
	}
}
