package health

import (
	"testing"
	"time"
)

// BenchmarkAssessNode is one agent poll's pure work on an 8-GPU, 18-NVLink node with 8
// InfiniBand ports: judge the readings, build the conditions and the GPU annotation.
func BenchmarkAssessNode(b *testing.B) {
	var r Readings
	for i := range 8 {
		g := healthyGPU(i)
		g.NVLinks = nil
		for l := range 18 {
			g.NVLinks = append(g.NVLinks, NVLinkReading{Link: l, Up: true, Errors: uint64(l)})
		}
		r.GPUs = append(r.GPUs, g)
	}
	for i := range 8 {
		r.IBPorts = append(r.IBPorts, IBPort{Device: "mlx5_" + itoa(i), Port: "1", State: "ACTIVE", PhysState: "LinkUp", RateGbps: 400})
	}
	r.GPUs[3].RowRemapPending = true
	prev := r
	exp := Expectations{IBPorts: 8, IBRateGbps: 400}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		f := Evaluate(&prev, r, exp)
		_ = Conditions(r, f, now)
		_ = FormatGPUs(GPUHealth(r, f))
	}
}
