package controller

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/remediation/health"
)

// activeFault is a True fault condition on a node.
type activeFault struct {
	Type    string
	Action  health.Action
	Message string
	XIDs    []uint64
}

// activeFaults lists the node's True fault conditions. A True condition with an unknown
// reason is treated as a node reboot: something is wrong and we cannot tell how local.
func activeFaults(node *corev1.Node) []activeFault {
	var out []activeFault
	for _, c := range node.Status.Conditions {
		if !health.IsRemediationFault(string(c.Type)) || c.Status != corev1.ConditionTrue {
			continue
		}
		a, ok := health.ActionFromReason(c.Reason)
		if !ok || a == health.ActionNone {
			a = health.ActionNodeReboot
		}
		f := activeFault{Type: string(c.Type), Action: a, Message: c.Message}
		if c.Type == corev1.NodeConditionType(health.GPUXidError) {
			f.XIDs = health.XIDsInMessage(c.Message)
		}
		out = append(out, f)
	}
	return out
}

// split separates faults that take the node out from those local to one GPU.
func split(faults []activeFault) (node, local []activeFault) {
	for _, f := range faults {
		if f.Action.GPULocal() {
			local = append(local, f)
		} else {
			node = append(node, f)
		}
	}
	return node, local
}

func worstAction(faults []activeFault) health.Action {
	a := health.ActionNone
	for _, f := range faults {
		a = max(a, f.Action)
	}
	return a
}

// reasonOf is the one-line reason shown in sinfo and Events.
func reasonOf(faults []activeFault) string {
	parts := make([]string, 0, len(faults))
	for _, f := range faults {
		parts = append(parts, f.Type+": "+f.Message)
	}
	sort.Strings(parts)
	return strings.Join(parts, " | ")
}

// unhealthyGPUs reads the GPUs the agent marked unhealthy.
func unhealthyGPUs(node *corev1.Node) []health.GPUInfo {
	gpus, err := health.ParseGPUs(node.Annotations[health.GPUsAnnotation])
	if err != nil {
		return nil
	}
	var bad []health.GPUInfo
	for _, g := range gpus {
		if !g.Healthy {
			bad = append(bad, g)
		}
	}
	return bad
}

func uuids(gpus []health.GPUInfo) []string {
	out := make([]string, 0, len(gpus))
	for _, g := range gpus {
		out = append(out, g.UUID)
	}
	return out
}
