package health

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// QuarantineTaint keeps new work off a node under remediation.
const QuarantineTaint = v1alpha1.QuarantineTaint

// RemediationAnnotation on a node holds the controller's RemediationState as JSON: where
// the node is in quarantine -> drain -> repair -> revalidate, and its fault history (kept
// across quarantines so repeated faults escalate).
const RemediationAnnotation = v1alpha1.RemediationAnnotation

// Phase is where a node is in remediation; empty means in service.
type Phase string

const (
	// PhaseRepairScheduled: a fault that can wait has a maintenance reservation booked for
	// its repair (RepairAt); the node stays in service until then.
	PhaseRepairScheduled Phase = "RepairScheduled"
	PhaseDraining        Phase = "Draining"
	PhaseAwaitingRepair  Phase = "AwaitingRepair"
	PhaseValidating      Phase = "Validating"
)

// RemediationState is the value of the RemediationAnnotation.
type RemediationState struct {
	Phase Phase `json:"phase,omitempty"`
	// Since is when the node was quarantined (taken out of service).
	Since  time.Time `json:"since,omitzero"`
	Action string    `json:"action,omitempty"`
	Reason string    `json:"reason,omitempty"`
	// Escalated: repeated faults turned this into a hardware repair; the node returns only
	// after the repair request is marked completed.
	Escalated     bool      `json:"escalated,omitempty"`
	DrainDeadline time.Time `json:"drainDeadline,omitzero"`
	ValidationPod string    `json:"validationPod,omitempty"`
	ValidationAt  time.Time `json:"validationAt,omitzero"`
	History       []Fault   `json:"history,omitempty"`
	// RepairAt is when a scheduled repair starts, and Reservation the maintenance
	// reservation that keeps the window free; the reservation is deleted once the node is
	// back in service.
	RepairAt    time.Time `json:"repairAt,omitzero"`
	Reservation string    `json:"reservation,omitempty"`
}

// Fault is one remediation in a node's history (shared with the Slurm node views).
type Fault = v1alpha1.NodeFault

// ParseRemediation reads a node's RemediationState; a node without one is in service.
func ParseRemediation(annotations map[string]string) (RemediationState, error) {
	var s RemediationState
	v, ok := annotations[RemediationAnnotation]
	if !ok {
		return s, nil
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, fmt.Errorf("annotation %s: %w", RemediationAnnotation, err)
	}
	return s, nil
}

// Format writes the state as a RemediationAnnotation value.
func (s RemediationState) Format() string {
	b, _ := json.Marshal(s) // plain struct
	return string(b)
}

var xidInMessage = regexp.MustCompile(`XID (\d+)`)

// XIDsInMessage reads back the XID numbers a GPUXidError message names (see Conditions).
func XIDsInMessage(msg string) []uint64 {
	var out []uint64
	for _, m := range xidInMessage.FindAllStringSubmatch(msg, -1) {
		if v, err := strconv.ParseUint(m[1], 10, 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// SlurmState is the node's state as sinfo shows it, with the reason: "" in service,
// DRAINING while its pods leave, DRAINED while it waits for repair or revalidation, DOWN
// when escalated to hardware repair.
func SlurmState(node *corev1.Node) (state, reason string) {
	s, err := ParseRemediation(node.Annotations)
	if err != nil || s.Phase == "" {
		return "", ""
	}
	switch {
	case s.Escalated:
		return "DOWN", s.Reason
	case s.Phase == PhaseDraining:
		return "DRAINING", s.Reason
	default:
		return "DRAINED", s.Reason
	}
}
