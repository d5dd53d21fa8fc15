// Package health is the pure core of GPU and InfiniBand remediation: it classifies XID
// errors, turns hardware readings into Kubernetes NodeConditions and per-GPU health, and
// defines the node and pod annotations the agent, the controller and the scheduler share.
// Nothing here talks to NVML, sysfs or the API server, so all of it is tested table-driven.
package health

// Action is the recovery an operator (or an external actuator) must carry out to clear a
// fault. Its order is its severity: a condition that gathers findings with different actions
// recommends the most severe one.
type Action int

const (
	// ActionNone: the fault is the workload's (an application XID); report it as an Event only.
	ActionNone Action = iota
	// ActionGPUReset: reset the one GPU; only the pods on that GPU must leave.
	ActionGPUReset
	// ActionNodeReboot: the whole node must be drained and rebooted.
	ActionNodeReboot
	// ActionLinkService: a network or fabric link needs service (reseat or replace a cable or
	// transceiver); the node is drained because multi-node jobs on it would stall.
	ActionLinkService
	// ActionHardwareRepair: a part must be replaced; the node stays out until an admin returns it.
	ActionHardwareRepair
)

var actionNames = map[Action]string{
	ActionNone:           "None",
	ActionGPUReset:       "GPUReset",
	ActionNodeReboot:     "NodeReboot",
	ActionLinkService:    "LinkService",
	ActionHardwareRepair: "HardwareRepair",
}

var actionAdvice = map[Action]string{
	ActionNone:           "no action; the workload caused it",
	ActionGPUReset:       "reset the GPU",
	ActionNodeReboot:     "drain and reboot the node",
	ActionLinkService:    "drain the node and service the link (reseat or replace cable/transceiver)",
	ActionHardwareRepair: "drain the node and repair or replace the hardware",
}

// String is the action's name as written in annotations and condition reasons.
func (a Action) String() string { return actionNames[a] }

// Advice is the recommended action in words, for condition messages and Events.
func (a Action) Advice() string { return actionAdvice[a] }

// GPULocal reports whether the fault can be handled on the one GPU without taking the node
// out: only pods on that GPU are evicted and the scheduler avoids just that GPU.
func (a Action) GPULocal() bool { return a == ActionGPUReset }

// Reason is the NodeCondition reason for a True condition recommending this action.
func (a Action) Reason() string { return a.String() + "Required" }

// ParseAction reads an action name (as String writes it) back.
func ParseAction(s string) (Action, bool) {
	for a, name := range actionNames {
		if name == s {
			return a, true
		}
	}
	return ActionNone, false
}

// ActionFromReason reads the action a True fault condition recommends from its reason.
func ActionFromReason(reason string) (Action, bool) {
	const suffix = "Required"
	if len(reason) <= len(suffix) || reason[len(reason)-len(suffix):] != suffix {
		return ActionNone, false
	}
	return ParseAction(reason[:len(reason)-len(suffix)])
}
