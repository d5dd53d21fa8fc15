package scheduler

import (
	"maps"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/sluicehq/sluice/bridge"
)

// draNode is what DRA adds to a node: the GPUs it publishes, and which of them claims
// hold that the core does not see as a task's (other schedulers' pods' claims, and every
// partition of a GPU: a MIG device drawing on a GPU's counters leaves none of it whole).
type draNode struct {
	gpus  []draDevice
	taken []bridge.GPUTaken // by GPU index; Task "" when free
	// attrs are the string attributes all its GPUs share, by qualified name
	// (gpu.nvidia.com/cliqueID): a partition's topology level may name one, so an NVLink
	// domain the driver publishes places gangs as a node label would.
	attrs map[string]string
}

// applyDRA makes a node without device-plugin GPUs take the GPUs it publishes through
// DRA, with what claims hold of them, and the device attributes the partitions' topology
// levels name as its labels.
func (n *draNode) apply(b *bridge.Node, parts []partitionEntry) {
	if n == nil || len(n.gpus) == 0 || len(b.GPUs) > 0 || b.Allocatable.GPUMilli > 0 {
		return
	}
	for i := range parts {
		for _, level := range parts[i].p.Topology {
			if v, ok := n.attrs[level]; ok && b.Labels[level] == "" {
				b.Labels = maps.Clone(b.Labels)
				if b.Labels == nil {
					b.Labels = map[string]string{}
				}
				b.Labels[level] = v
			}
		}
	}
	b.GPUs = make([]bridge.GPU, len(n.gpus))
	for i, d := range n.gpus {
		b.GPUs[i] = d.gpu
		if t := n.taken[i]; t.Task != "" {
			b.GPUs[i].Taken = []bridge.GPUTaken{t}
		}
		b.Allocatable.GPUMemoryMiB += d.gpu.MemoryMiB
	}
	b.Allocatable.GPUMilli = int64(len(n.gpus)) * 1000
}

// refreshDRANode recomputes a node's DRA GPUs and what claims hold of them. Caller holds
// c.mu.
func (c *cache) refreshDRANode(name string) {
	e := c.node(name)
	gpus := c.dra.nodeDevices(name)
	var next *draNode
	if len(gpus) > 0 {
		next = &draNode{gpus: gpus, taken: c.draTaken(name, gpus), attrs: c.dra.sharedAttributes(gpus)}
	}
	if sameDRANode(e.dra, next) {
		return
	}
	gpuSetChanged := e.dra == nil || next == nil || !slices.EqualFunc(e.dra.gpus, next.gpus, func(a, b draDevice) bool { return a.id == b.id && sameGPU(a.gpu, b.gpu) })
	e.dra, e.dirty = next, true
	if gpuSetChanged {
		c.nodeGen++ // where claims fit may have changed (dra_pods.go)
	}
	c.poke()
}

// refreshDRATaken recomputes what claims hold of a node's GPUs, its devices unchanged (a
// claim, not a slice, changed). Caller holds c.mu.
func (c *cache) refreshDRATaken(name string) {
	e := c.nodes[name]
	if e == nil || e.dra == nil {
		return
	}
	taken := c.draTaken(name, e.dra.gpus)
	if slices.Equal(taken, e.dra.taken) {
		return
	}
	next := *e.dra
	next.taken = taken
	e.dra, e.dirty = &next, true
	c.poke()
}

func sameDRANode(a, b *draNode) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.EqualFunc(a.gpus, b.gpus, func(x, y draDevice) bool { return x.id == y.id && sameGPU(x.gpu, y.gpu) }) &&
		slices.Equal(a.taken, b.taken) && maps.Equal(a.attrs, b.attrs)
}

// draTaken marks the node's GPUs that allocated claims hold outside the core's view: a
// whole GPU held by a claim of none of our pods, and any GPU a partition of it is
// allocated from.
func (c *cache) draTaken(node string, gpus []draDevice) []bridge.GPUTaken {
	taken := make([]bridge.GPUTaken, len(gpus))
	byID := make(map[structured.DeviceID]int, len(gpus))
	byCounters := map[string]int{}
	for i, g := range gpus {
		byID[g.id] = i
		if g.counters != "" {
			byCounters[g.id.Driver.String()+"/"+g.id.Pool.String()+"/"+g.counters] = i
		}
	}
	_, claims := c.dra.allocatedDevices(node)
	for _, claim := range claims {
		holder := "claim/" + claim.Namespace + "/" + claim.Name
		// One being written for a pod of ours has no consumer yet: it is ours too.
		ours := c.claimOfOurs(claim) || c.dra.pending[claim.Namespace+"/"+claim.Name] != nil
		for _, r := range claim.Status.Allocation.Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess {
				continue
			}
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if i, ok := byID[id]; ok {
				if !ours {
					taken[i] = bridge.GPUTaken{Task: holder, Milli: 1000}
				}
				continue
			}
			for _, set := range c.dra.deviceCounters(id) {
				if i, ok := byCounters[r.Driver+"/"+r.Pool+"/"+set]; ok {
					taken[i] = bridge.GPUTaken{Task: holder, Milli: 1000}
				}
			}
		}
	}
	return taken
}

// claimOfOurs reports whether a claim is reserved for one of this scheduler's pods, whose
// task the core places and counts itself.
func (c *cache) claimOfOurs(claim *resourceapi.ResourceClaim) bool {
	for _, r := range claim.Status.ReservedFor {
		if r.Resource != "pods" {
			continue
		}
		if p := c.pods[claim.Namespace+"/"+r.Name]; p != nil && p.ours && p.uid == r.UID {
			return true
		}
	}
	return false
}

// deviceCounters names the counter sets a device draws on.
func (d *draState) deviceCounters(id structured.DeviceID) []string {
	for _, s := range d.byPool[id.Driver.String()+"/"+id.Pool.String()] {
		for i := range s.Spec.Devices {
			dev := &s.Spec.Devices[i]
			if dev.Name != id.Device.String() {
				continue
			}
			var sets []string
			for _, cc := range dev.ConsumesCounters {
				sets = append(sets, cc.CounterSet)
			}
			return sets
		}
	}
	return nil
}

// draNodesOf names the nodes whose devices a claim's allocation uses.
func (d *draState) draNodesOf(claim *resourceapi.ResourceClaim) []string {
	if claim == nil || claim.Status.Allocation == nil {
		return nil
	}
	var out []string
	for _, r := range claim.Status.Allocation.Devices.Results {
		for _, s := range d.byPool[r.Driver+"/"+r.Pool] {
			if s.Spec.NodeName != nil && !slices.Contains(out, *s.Spec.NodeName) {
				out = append(out, *s.Spec.NodeName)
			}
		}
	}
	return out
}

// sharedAttributes are the string attributes every one of a node's GPUs has with one
// value, by qualified name (driver/attribute).
func (d *draState) sharedAttributes(gpus []draDevice) map[string]string {
	var out map[string]string
	for i, g := range gpus {
		dev := d.device(g.id)
		if dev == nil {
			return nil
		}
		here := map[string]string{}
		for name, a := range dev.Attributes {
			if a.StringValue == nil {
				continue
			}
			q := string(name)
			if !strings.Contains(q, "/") {
				q = g.id.Driver.String() + "/" + q
			}
			here[q] = *a.StringValue
		}
		if i == 0 {
			out = here
			continue
		}
		for k, v := range out {
			if here[k] != v {
				delete(out, k)
			}
		}
	}
	return out
}

// device finds a published device by its id.
func (d *draState) device(id structured.DeviceID) *resourceapi.Device {
	for _, s := range d.byPool[id.Driver.String()+"/"+id.Pool.String()] {
		for i := range s.Spec.Devices {
			if s.Spec.Devices[i].Name == id.Device.String() {
				return &s.Spec.Devices[i]
			}
		}
	}
	return nil
}
