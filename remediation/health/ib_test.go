package health

import (
	"strings"
	"testing"
)

// hdrNode is a node with four 200 Gb/s HDR ports on ConnectX-6 adapters (MT4123), each
// adapter on a PCIe Gen4 x16 link, and counters at rest.
func hdrNode() Readings {
	r := Readings{}
	for _, dev := range []string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"} {
		r.IBDevices = append(r.IBDevices, IBDevice{Name: dev, HCAType: "MT4123",
			PCIe: PCIeLink{Width: 16, MaxWidth: 16, SpeedGTs: 16, MaxSpeedGTs: 16}})
		r.IBPorts = append(r.IBPorts, IBPort{Device: dev, Port: "1", State: "ACTIVE", PhysState: "LinkUp",
			RateGbps: 200, LinkLayer: "InfiniBand", Counters: &IBCounters{LinkDowned: 1, SymbolErrors: 7}})
	}
	return r
}

// TestEvaluateIBWithoutConfiguration: with nothing configured (no port count, no rate
// table) every InfiniBand fault class is still found, from sysfs alone and from what the
// agent saw before; and what is normal raises nothing.
func TestEvaluateIBWithoutConfiguration(t *testing.T) {
	learned := Expectations{IBPorts: 4, IBSymbolErrors: 10,
		IBPortRates: map[string]float64{"mlx5_0/1": 200, "mlx5_1/1": 200, "mlx5_2/1": 200, "mlx5_3/1": 200}}
	tests := []struct {
		name    string
		exp     Expectations
		change  func(r *Readings)
		mention string // "" : healthy
	}{
		{"healthy", learned, func(*Readings) {}, ""},
		{"a 200 Gb/s port running at 100 beside its peers", Expectations{},
			func(r *Readings) { r.IBPorts[2].RateGbps = 100 }, "port mlx5_2/1 rate 100 Gb/s below 200 Gb/s of the node's other MT4123 ports"},
		{"every port downgraded, below what each ran at", learned,
			func(r *Readings) {
				for i := range r.IBPorts {
					r.IBPorts[i].RateGbps = 100
				}
			}, "port mlx5_0/1 rate 100 Gb/s below the 200 Gb/s it ran at"},
		{"configured floor", Expectations{IBRateGbps: 400}, func(*Readings) {}, "rate 200 Gb/s below 400 Gb/s"},
		{"port gone since the agent saw it", learned, func(r *Readings) { r.IBPorts = r.IBPorts[1:] }, "3 of 4 InfiniBand ports present"},
		{"port down", learned, func(r *Readings) { r.IBPorts[1].State = "DOWN" }, "port mlx5_1/1 state DOWN"},
		{"link retrained", learned, func(r *Readings) { r.IBPorts[3].Counters.LinkDowned = 3 }, "port mlx5_3/1 link went down 2 times"},
		{"symbol errors past the budget", learned, func(r *Readings) { r.IBPorts[0].Counters.SymbolErrors = 7 + 11 }, "port mlx5_0/1 gained 11 symbol errors"},
		{"symbol errors within the budget", learned, func(r *Readings) { r.IBPorts[0].Counters.SymbolErrors = 7 + 10 }, ""},
		{"counters cleared by the fabric manager", learned, func(r *Readings) { r.IBPorts[0].Counters = &IBCounters{} }, ""},
		{"HCA PCIe link narrower", learned, func(r *Readings) { r.IBDevices[1].PCIe.Width = 8 }, "HCA mlx5_1 PCIe width x8 below x16"},
		{"HCA PCIe link slower", learned, func(r *Readings) { r.IBDevices[0].PCIe.SpeedGTs = 8 }, "HCA mlx5_0 PCIe 8 GT/s below 16 GT/s"},
		{"HCA PCIe link not reported (virtual function)", learned, func(r *Readings) { r.IBDevices[0].PCIe = PCIeLink{} }, ""},
		{"a slower adapter model is not a peer", Expectations{}, func(r *Readings) {
			r.IBDevices[3].HCAType = "MT4119"
			r.IBPorts[3].RateGbps = 100
		}, ""},
		{"an Ethernet port is not a peer of the InfiniBand ones", Expectations{}, func(r *Readings) {
			r.IBPorts[3].LinkLayer, r.IBPorts[3].RateGbps = "Ethernet", 100
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev, cur := hdrNode(), hdrNode()
			tt.change(&cur)
			findings := Evaluate(&prev, cur, tt.exp)
			if tt.mention == "" {
				if len(findings) != 0 {
					t.Fatalf("findings %+v, want none", findings)
				}
				return
			}
			if len(findings) == 0 {
				t.Fatalf("no finding, want one about %q", tt.mention)
			}
			var details []string
			for _, f := range findings {
				if f.Condition != InfiniBandDegraded || f.Action != ActionLinkService || f.GPU != -1 {
					t.Errorf("finding %+v, want a node-wide InfiniBandDegraded needing link service", f)
				}
				details = append(details, f.Detail)
			}
			if !strings.Contains(strings.Join(details, "; "), tt.mention) {
				t.Errorf("findings %q do not say %q", details, tt.mention)
			}
		})
	}
}
