package v1alpha1

import (
	"encoding/json"
	"fmt"
	"time"
)

// LastValidationAnnotation on a node holds its latest NodeValidation as JSON, running or
// finished. The remediation controller writes it; the Slurm node views (sinfo -R,
// scontrol show node) and the dashboard read it.
const LastValidationAnnotation = "sluice.dev/last-validation"

// Validation results.
const (
	ValidationRunning = "Running"
	ValidationPassed  = "Passed"
	ValidationFailed  = "Failed"
	// ValidationPreempted: a job took the idle node before the validation finished; it
	// says nothing about the node and is not a failure.
	ValidationPreempted = "Preempted"
)

// Validation kinds: an idle node's scheduled check, or the check a repaired node passes
// before it returns.
const (
	ValidationIdle   = "idle"
	ValidationRepair = "repair"
)

// NodeValidation is one validation run of a node.
// +kubebuilder:object:generate=false
type NodeValidation struct {
	Kind       string    `json:"kind"`
	Pod        string    `json:"pod,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	Result     string    `json:"result"`
	// Detail says what failed, or what preempted it.
	Detail string `json:"detail,omitempty"`
}

// ParseLastValidation reads a node's LastValidationAnnotation; ok is false without one.
func ParseLastValidation(annotations map[string]string) (v NodeValidation, ok bool, err error) {
	raw, ok := annotations[LastValidationAnnotation]
	if !ok {
		return v, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return v, true, fmt.Errorf("annotation %s: %w", LastValidationAnnotation, err)
	}
	return v, true, nil
}

// Format writes the run as a LastValidationAnnotation value.
func (v NodeValidation) Format() string {
	b, _ := json.Marshal(v) // plain struct
	return string(b)
}

// Duration is how long the run took (so far, for a running one, as of now).
func (v NodeValidation) Duration(now time.Time) time.Duration {
	end := v.FinishedAt
	if end.IsZero() {
		end = now
	}
	return end.Sub(v.StartedAt).Round(time.Second)
}

// Summary is the one line the Slurm views show, e.g.
// "Passed 2026-12-03T14:40:00Z (12s, idle)" or "Failed ... (3m0s, idle): validate exited 1".
func (v NodeValidation) Summary(now time.Time) string {
	s := fmt.Sprintf("%s %s (%s, %s)", v.Result, v.StartedAt.UTC().Format(time.RFC3339), v.Duration(now), v.Kind)
	if v.Detail != "" {
		s += ": " + v.Detail
	}
	return s
}

// RemediationAnnotation on a node holds the remediation controller's state as JSON (see
// remediation/health.RemediationState): where the node is in quarantine -> drain ->
// repair -> revalidate, and its recent faults (History), which the Slurm node views show.
const RemediationAnnotation = "sluice.dev/remediation"

// NodeFault is one remediation in a node's history.
// +kubebuilder:object:generate=false
type NodeFault struct {
	At        time.Time `json:"at"`
	Condition string    `json:"condition"`
	Action    string    `json:"action"`
	XIDs      []uint64  `json:"xids,omitempty"`
	GPUs      []string  `json:"gpus,omitempty"`
	// Quarantined: the node was taken out (not just one GPU's pods evicted).
	Quarantined bool `json:"quarantined,omitempty"`
}

// ParseFaultHistory reads the recent faults from a node's RemediationAnnotation; none
// without one.
func ParseFaultHistory(annotations map[string]string) ([]NodeFault, error) {
	raw, ok := annotations[RemediationAnnotation]
	if !ok {
		return nil, nil
	}
	var st struct {
		History []NodeFault `json:"history"`
	}
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", RemediationAnnotation, err)
	}
	return st.History, nil
}
