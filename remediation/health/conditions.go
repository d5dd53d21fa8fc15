package health

// ConditionType is a NodeCondition type the agent owns.
type ConditionType string

const (
	GPUXidError        ConditionType = "GPUXidError"
	GPUNVLinkDegraded  ConditionType = "GPUNVLinkDegraded"
	GPUPCIeDegraded    ConditionType = "GPUPCIeDegraded"
	GPURowRemapPending ConditionType = "GPURowRemapPending"
	GPURowRemapFailure ConditionType = "GPURowRemapFailure"
	GPUMemoryECC       ConditionType = "GPUMemoryECC"
	GPULost            ConditionType = "GPULost"
	InfiniBandDegraded ConditionType = "InfiniBandDegraded"
)

// FaultConditions lists every condition type the agent sets, in the order it writes them.
var FaultConditions = []ConditionType{
	GPUXidError, GPUNVLinkDegraded, GPUPCIeDegraded, GPURowRemapPending,
	GPURowRemapFailure, GPUMemoryECC, GPULost, InfiniBandDegraded,
}

// IsFaultCondition reports whether t is one of the agent's condition types.
func IsFaultCondition(t string) bool {
	for _, c := range FaultConditions {
		if string(c) == t {
			return true
		}
	}
	return false
}

// Reasons of conditions that are not True.
const (
	ReasonHealthy          = "Healthy"
	ReasonNVMLUnavailable  = "NVMLUnavailable"
	ReasonSysfsUnavailable = "InfiniBandSysfsUnavailable"
)
