package health

import "fmt"

// Finding is one fault seen in a poll.
type Finding struct {
	Condition ConditionType
	// GPU is the GPU's index, or -1 for a node-wide finding (InfiniBand).
	GPU    int
	UUID   string
	Action Action
	Detail string
}

// Evaluate judges the current readings. prev is the previous poll (nil on the first), used
// to see NVLink error counters grow; exp is what this node model should have.
func Evaluate(prev *Readings, cur Readings, exp Expectations) []Finding {
	var out []Finding
	if cur.NVMLError == "" {
		for _, g := range cur.GPUs {
			out = append(out, evaluateGPU(previousGPU(prev, g.UUID), g)...)
		}
		for _, x := range cur.XIDs {
			if a, desc := ClassifyXID(x.XID, x.Driver); a != ActionNone {
				out = append(out, gpuFinding(GPUXidError, x.GPU, x.UUID, a, desc))
			}
		}
	}
	if cur.IBError == "" {
		out = append(out, evaluateIB(prev, cur, exp)...)
	}
	return out
}

func previousGPU(prev *Readings, uuid string) *GPUReading {
	if prev == nil {
		return nil
	}
	for i := range prev.GPUs {
		if prev.GPUs[i].UUID == uuid {
			return &prev.GPUs[i]
		}
	}
	return nil
}

func gpuFinding(c ConditionType, index int, uuid string, a Action, detail string) Finding {
	return Finding{Condition: c, GPU: index, UUID: uuid, Action: a, Detail: detail}
}

func evaluateGPU(prev *GPUReading, g GPUReading) []Finding {
	f := func(c ConditionType, a Action, detail string) Finding {
		return gpuFinding(c, g.Index, g.UUID, a, detail)
	}
	if g.Lost {
		return []Finding{f(GPULost, ActionNodeReboot, "GPU lost from the bus")}
	}
	var out []Finding
	for _, l := range g.NVLinks {
		if !l.Up {
			out = append(out, f(GPUNVLinkDegraded, ActionNodeReboot, fmt.Sprintf("NVLink %d down", l.Link)))
		} else if p := previousLink(prev, l.Link); p != nil && l.Errors > p.Errors {
			out = append(out, f(GPUNVLinkDegraded, ActionGPUReset,
				fmt.Sprintf("NVLink %d errors grew %d -> %d", l.Link, p.Errors, l.Errors)))
		}
	}
	if p := g.PCIe; p.MaxWidth > 0 && p.Width > 0 && p.Width < p.MaxWidth {
		out = append(out, f(GPUPCIeDegraded, ActionGPUReset, fmt.Sprintf("PCIe width x%d below x%d", p.Width, p.MaxWidth)))
	}
	if p := g.PCIe; p.Busy && p.MaxGen > 0 && p.Gen > 0 && p.Gen < p.MaxGen {
		out = append(out, f(GPUPCIeDegraded, ActionGPUReset, fmt.Sprintf("PCIe Gen%d below Gen%d while busy", p.Gen, p.MaxGen)))
	}
	if g.RowRemapPending {
		out = append(out, f(GPURowRemapPending, ActionGPUReset, "row remap pending"))
	}
	if g.RowRemapFailure {
		out = append(out, f(GPURowRemapFailure, ActionHardwareRepair, "row remapping failed"))
	}
	if g.VolatileDBE > 0 {
		out = append(out, f(GPUMemoryECC, ActionGPUReset, fmt.Sprintf("%d volatile double-bit ECC errors", g.VolatileDBE)))
	}
	return out
}

func previousLink(prev *GPUReading, link int) *NVLinkReading {
	if prev == nil {
		return nil
	}
	for i := range prev.NVLinks {
		if prev.NVLinks[i].Link == link {
			return &prev.NVLinks[i]
		}
	}
	return nil
}
