package health

import "github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"

// ValidationFailed is the NodeCondition the remediation controller (not the agent) owns:
// True when the node's last validation failed (reason HardwareRepairRequired, the message
// says what failed), False with reason Passed once one passes. A True ValidationFailed is a
// fault like the agent's: it quarantines the node through the circuit breaker.
const ValidationFailed ConditionType = "ValidationFailed"

// ReasonValidationPassed is ValidationFailed's reason when False.
const ReasonValidationPassed = "Passed"

// IsRemediationFault reports whether a True condition of type t takes the node (or a GPU)
// out: the agent's fault conditions and ValidationFailed.
func IsRemediationFault(t string) bool { return t == string(ValidationFailed) || IsFaultCondition(t) }

// The last validation of a node, shared with the Slurm views (v1alpha1).
const LastValidationAnnotation = v1alpha1.LastValidationAnnotation

// ValidationRun is one validation of a node.
type ValidationRun = v1alpha1.NodeValidation

// Validation results and kinds.
const (
	ValidationRunning   = v1alpha1.ValidationRunning
	ValidationPassed    = v1alpha1.ValidationPassed
	ValidationFailedRun = v1alpha1.ValidationFailed
	ValidationPreempted = v1alpha1.ValidationPreempted
	ValidationIdle      = v1alpha1.ValidationIdle
	ValidationRepair    = v1alpha1.ValidationRepair
)

// ParseLastValidation reads a node's LastValidationAnnotation; ok is false without one.
func ParseLastValidation(annotations map[string]string) (ValidationRun, bool, error) {
	return v1alpha1.ParseLastValidation(annotations)
}
