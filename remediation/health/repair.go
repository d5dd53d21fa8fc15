package health

import (
	"encoding/json"
	"fmt"
	"time"
)

// RepairAnnotation on a node holds the controller's current RepairRequest as JSON. An
// external actuator (a reboot operator, a GPU reset job, a technician's tooling) carries it
// out and sets CompletedAt; the agent then forgets XIDs older than the completion and the
// controller moves on to revalidation.
const RepairAnnotation = "sluice.dev/repair"

// RepairRequest asks for one recovery action on a node.
type RepairRequest struct {
	Action string `json:"action"`
	Reason string `json:"reason"`
	// GPUs lists the UUIDs for a GPU-local action; empty means the whole node.
	GPUs        []string   `json:"gpus,omitempty"`
	RequestedAt time.Time  `json:"requestedAt"`
	Escalated   bool       `json:"escalated,omitempty"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
}

// ParseRepair reads a RepairAnnotation value; ok is false when the node has none.
func ParseRepair(annotations map[string]string) (r RepairRequest, ok bool, err error) {
	v, ok := annotations[RepairAnnotation]
	if !ok {
		return r, false, nil
	}
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return r, true, fmt.Errorf("annotation %s: %w", RepairAnnotation, err)
	}
	return r, true, nil
}

// Format writes the request as a RepairAnnotation value.
func (r RepairRequest) Format() string {
	b, _ := json.Marshal(r) // plain struct
	return string(b)
}
