package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/sluicehq/sluice/remediation/health"
)

// Faults is the fault-injection file's content: faults laid over the real (or, without
// NVML, the simulated) readings, so the rig and tests can break a node on demand. Removing
// an entry, or the file, heals it. Example:
//
//	{"xids":[{"gpu":0,"xid":79}],
//	 "gpus":[{"index":3,"rowRemapPending":true}],
//	 "ibPortsDown":["mlx5_0/1"], "ibPortRates":{"mlx5_1/1":100}}
type Faults struct {
	XIDs        []InjectedXID `json:"xids,omitempty"`
	GPUs        []InjectedGPU `json:"gpus,omitempty"`
	IBPortsDown []string      `json:"ibPortsDown,omitempty"`
	// IBPortRates sets a port's rate in Gb/s: a link that trained below its speed.
	IBPortRates map[string]float64 `json:"ibPortRates,omitempty"`
}

// InjectedXID is a critical XID on the GPU at index GPU. DriverAction is the driver's
// recovery action (health.DriverAction values); absent means the driver gave none.
type InjectedXID struct {
	GPU          int    `json:"gpu"`
	XID          uint64 `json:"xid"`
	DriverAction *int   `json:"driverAction,omitempty"`
}

// InjectedGPU sets faults on the GPU at Index.
type InjectedGPU struct {
	Index           int    `json:"index"`
	Lost            bool   `json:"lost,omitempty"`
	RowRemapPending bool   `json:"rowRemapPending,omitempty"`
	RowRemapFailure bool   `json:"rowRemapFailure,omitempty"`
	VolatileDBE     uint64 `json:"volatileDBE,omitempty"`
	NVLinkDown      []int  `json:"nvlinkDown,omitempty"`
	// NVLinkErrors is added to the error count of every link at each poll, so it grows.
	NVLinkErrors uint64 `json:"nvlinkErrors,omitempty"`
	PCIeWidth    int    `json:"pcieWidth,omitempty"`
}

// WriteFaults sets the faults an agent with FaultFile path injects: written whole (a
// temporary file renamed over it) so the agent never reads half of it; nil removes the
// file, which heals the node.
func WriteFaults(path string, f *Faults) error {
	if f == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// readFaults reads the injection file; a missing file is no faults.
func readFaults(path string) (Faults, error) {
	var f Faults
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("fault file %s: %w", path, err)
	}
	return f, nil
}

// apply lays the faults over the readings. poll counts polls so injected NVLink errors grow.
func (f Faults) apply(r *health.Readings, poll uint64, at time.Time) {
	for _, x := range f.XIDs {
		rec := health.XIDRecord{GPU: x.GPU, UUID: uuidAt(r, x.GPU), XID: x.XID, Driver: health.DriverActionUnknown, At: at}
		if x.DriverAction != nil {
			rec.Driver = health.DriverAction(*x.DriverAction)
		}
		r.XIDs = append(r.XIDs, rec)
	}
	for _, inj := range f.GPUs {
		for i := range r.GPUs {
			if g := &r.GPUs[i]; g.Index == inj.Index {
				inj.applyTo(g, poll)
			}
		}
	}
	for _, name := range f.IBPortsDown {
		for i := range r.IBPorts {
			if p := &r.IBPorts[i]; p.Name() == name {
				p.State, p.PhysState = "DOWN", "Disabled"
			}
		}
	}
	for i := range r.IBPorts {
		if rate, ok := f.IBPortRates[r.IBPorts[i].Name()]; ok {
			r.IBPorts[i].RateGbps = rate
		}
	}
}

func (inj InjectedGPU) applyTo(g *health.GPUReading, poll uint64) {
	g.Lost = g.Lost || inj.Lost
	g.RowRemapPending = g.RowRemapPending || inj.RowRemapPending
	g.RowRemapFailure = g.RowRemapFailure || inj.RowRemapFailure
	g.VolatileDBE += inj.VolatileDBE
	if inj.PCIeWidth > 0 {
		g.PCIe.Width = inj.PCIeWidth
		g.PCIe.MaxWidth = max(g.PCIe.MaxWidth, 16)
	}
	for _, down := range inj.NVLinkDown {
		g.NVLinks = withLink(g.NVLinks, down)
		for i := range g.NVLinks {
			if g.NVLinks[i].Link == down {
				g.NVLinks[i].Up = false
			}
		}
	}
	if inj.NVLinkErrors > 0 {
		g.NVLinks = withLink(g.NVLinks, 0)
		for i := range g.NVLinks {
			g.NVLinks[i].Errors += inj.NVLinkErrors * poll
		}
	}
}

// withLink makes sure a simulated GPU (which reports no links) has the injected link.
func withLink(links []health.NVLinkReading, link int) []health.NVLinkReading {
	for _, l := range links {
		if l.Link == link {
			return links
		}
	}
	return append(links, health.NVLinkReading{Link: link, Up: true})
}

func uuidAt(r *health.Readings, index int) string {
	for _, g := range r.GPUs {
		if g.Index == index {
			return g.UUID
		}
	}
	return "GPU-index-" + itoa(index)
}
