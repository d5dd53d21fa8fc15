package resvcontroller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Node is what node resolution reads of a node: its labels, whether it takes work, and
// when the work on it ends.
type Node struct {
	Name          string
	Labels        map[string]string
	Unschedulable bool
	// BusyUntil is when the last job's pod on it will have ended by its time limit;
	// zero for an idle node, Forever for work without a limit.
	BusyUntil time.Time
}

// Forever is the end of work that has no time limit.
var Forever = jobstate.Forever

// InPartition reports whether a node is in partition name, as the scheduler places it
// (v1alpha1.NodePartition).
func InPartition(nodeLabels map[string]string, name string, parts map[string]*v1alpha1.Partition) bool {
	return v1alpha1.NodePartition(nodeLabels, parts) == name
}

// PartitionKnown reports whether a partition exists: a Partition object, or a node
// labelled into it.
func PartitionKnown(name string, parts map[string]*v1alpha1.Partition, nodes []Node) bool {
	if parts[name] != nil {
		return true
	}
	return slices.ContainsFunc(nodes, func(n Node) bool { return n.Labels[v1alpha1.PartitionLabel] == name })
}

// Reasons of the Ready condition.
const (
	ReasonResolved        = "NodesResolved"
	ReasonUnknownNodes    = "UnknownNodes"
	ReasonUnknownPart     = "UnknownPartition"
	ReasonNotEnoughNodes  = "NotEnoughNodes"
	ReasonNoNodesAsked    = "NoNodes"
	ConditionReady        = "Ready"
	ConditionUsed         = "Used"
	ReasonJobRan          = "JobRan"
	eventStarted          = "Started"
	eventEnded            = "Ended"
	eventPurged           = "Purged"
	eventNodesResolved    = ReasonResolved
	eventNodesNotResolved = "NodesNotResolved"
)

// Resolution is the nodes a reservation holds, or why they cannot be resolved (Reason
// and Message of its Ready condition; Nodes may still hold what could be).
type Resolution struct {
	Nodes   []string
	Ready   bool
	Reason  string
	Message string
}

// Resolve works out r's nodes from the cluster's nodes and partitions:
//   - spec.nodes as given (each must exist);
//   - PART_NODES: every node of spec.partition, kept current;
//   - nodeCount: as many nodes of spec.partition (any with ANY_NODES), chosen once and
//     kept in status: nodes that take work and that no reservation whose windows meet
//     r's holds (taken), idle ones first, then those whose work ends soonest, by name.
func Resolve(r *v1alpha1.Reservation, nodes []Node, parts map[string]*v1alpha1.Partition, taken map[string]bool) Resolution {
	spec := r.Spec
	switch {
	case len(spec.Nodes) > 0:
		known := map[string]bool{}
		for _, n := range nodes {
			known[n.Name] = true
		}
		var missing []string
		for _, n := range spec.Nodes {
			if !known[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return Resolution{Nodes: spec.Nodes, Reason: ReasonUnknownNodes, Message: "no such node: " + strings.Join(missing, ", ")}
		}
		return resolved(spec.Nodes)
	case r.HasFlag(v1alpha1.ReservationPartNodes) && spec.NodeCount == nil:
		if spec.Partition == "" || !PartitionKnown(spec.Partition, parts, nodes) {
			return Resolution{Reason: ReasonUnknownPart, Message: fmt.Sprintf("partition %q does not exist", spec.Partition)}
		}
		var out []string
		for _, n := range nodes {
			if InPartition(n.Labels, spec.Partition, parts) {
				out = append(out, n.Name)
			}
		}
		slices.Sort(out)
		if len(out) == 0 {
			return Resolution{Reason: ReasonNotEnoughNodes, Message: fmt.Sprintf("partition %s has no nodes", spec.Partition)}
		}
		return resolved(out)
	case spec.NodeCount != nil:
		if len(r.Status.Nodes) > 0 {
			return resolved(r.Status.Nodes) // chosen when first resolved
		}
		return chooseNodes(r, nodes, parts, taken)
	}
	return Resolution{Reason: ReasonNoNodesAsked, Message: "set nodes, nodeCount or partition with PART_NODES"}
}

func resolved(nodes []string) Resolution {
	return Resolution{Nodes: slices.Clone(nodes), Ready: true, Reason: ReasonResolved,
		Message: fmt.Sprintf("%d node(s)", len(nodes))}
}

// chooseNodes picks a nodeCount reservation's nodes.
func chooseNodes(r *v1alpha1.Reservation, nodes []Node, parts map[string]*v1alpha1.Partition, taken map[string]bool) Resolution {
	spec := r.Spec
	anyNodes := r.HasFlag(v1alpha1.ReservationAnyNodes)
	if !anyNodes && (spec.Partition == "" || !PartitionKnown(spec.Partition, parts, nodes)) {
		return Resolution{Reason: ReasonUnknownPart, Message: fmt.Sprintf("partition %q does not exist (name one, or set ANY_NODES)", spec.Partition)}
	}
	var cands []Node
	for _, n := range nodes {
		if n.Unschedulable || taken[n.Name] {
			continue
		}
		if anyNodes || InPartition(n.Labels, spec.Partition, parts) {
			cands = append(cands, n)
		}
	}
	want := int(*spec.NodeCount)
	where := "partition " + spec.Partition
	if anyNodes {
		where = "the cluster"
	}
	if len(cands) < want {
		return Resolution{Reason: ReasonNotEnoughNodes, Message: fmt.Sprintf(
			"wants %d node(s); %s has %d that take work and no other reservation holds then", want, where, len(cands))}
	}
	slices.SortFunc(cands, func(a, b Node) int {
		if c := a.BusyUntil.Compare(b.BusyUntil); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	out := make([]string, want)
	for i := range out {
		out[i] = cands[i].Name
	}
	slices.Sort(out)
	return resolved(out)
}
