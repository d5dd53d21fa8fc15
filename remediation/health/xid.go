package health

import "fmt"

// DriverAction is the recovery action the NVIDIA driver itself recommends for the latest
// error (NVML field FI_DEV_GET_GPU_RECOVERY_ACTION, drivers r550 and later). The values are
// NVML's nvmlDeviceGpuRecoveryAction_t; DriverActionUnknown means the driver did not say.
type DriverAction int

const (
	DriverActionUnknown DriverAction = -1
	// The values below equal NVML's NVML_GPU_RECOVERY_ACTION_* constants.
	DriverActionNone              DriverAction = 0
	DriverActionGPUReset          DriverAction = 1
	DriverActionNodeReboot        DriverAction = 2
	DriverActionDrainP2P          DriverAction = 3
	DriverActionDrainAndReset     DriverAction = 4
	DriverActionRecoverIMEXDomain DriverAction = 5
	DriverActionBusReset          DriverAction = 6
	DriverActionSystemReboot      DriverAction = 7
)

// driverActions maps the driver's recommendation onto ours. Draining peer-to-peer traffic
// and resetting is a GPU reset once the GPU's pods are gone; an IMEX domain spans nodes
// through NVLink, so recovering it takes the node out like a reboot.
var driverActions = map[DriverAction]Action{
	DriverActionNone:              ActionNone,
	DriverActionGPUReset:          ActionGPUReset,
	DriverActionNodeReboot:        ActionNodeReboot,
	DriverActionDrainP2P:          ActionGPUReset,
	DriverActionDrainAndReset:     ActionGPUReset,
	DriverActionRecoverIMEXDomain: ActionNodeReboot,
	DriverActionBusReset:          ActionGPUReset,
	DriverActionSystemReboot:      ActionNodeReboot,
}

type xidClass struct {
	action Action
	what   string
}

// xidTable classifies the XIDs NVIDIA's XID catalog documents with a known remedy. XIDs the
// workload causes (bad memory access, an exception in a kernel, a killed channel) leave the
// GPU healthy and are only reported; XIDs that leave the GPU or the node unusable name the
// recovery. XIDs absent from the table are reported as Events, never acted on, so an
// unknown number never drains a node.
var xidTable = map[uint64]xidClass{
	13:  {ActionNone, "graphics engine exception"},
	31:  {ActionNone, "GPU memory page fault"},
	32:  {ActionNone, "invalid or corrupted push buffer stream"},
	38:  {ActionNone, "driver firmware error"},
	43:  {ActionNone, "GPU stopped processing (channel reset)"},
	45:  {ActionNone, "preemptive cleanup after previous errors"},
	63:  {ActionNone, "ECC page retirement or row remap recorded"},
	68:  {ActionNone, "video decoder exception"},
	69:  {ActionNone, "graphics engine class error"},
	92:  {ActionNone, "high single-bit ECC error rate"},
	94:  {ActionNone, "contained ECC error"},
	48:  {ActionGPUReset, "double-bit ECC error"},
	61:  {ActionGPUReset, "internal micro-controller breakpoint"},
	62:  {ActionGPUReset, "internal micro-controller halt"},
	64:  {ActionGPUReset, "ECC page retirement or row remapper recording failure"},
	74:  {ActionGPUReset, "NVLink error"},
	95:  {ActionGPUReset, "uncontained ECC error"},
	109: {ActionGPUReset, "context switch timeout"},
	119: {ActionGPUReset, "GSP RPC timeout"},
	120: {ActionGPUReset, "GSP error"},
	140: {ActionGPUReset, "unrecovered ECC error"},
	79:  {ActionNodeReboot, "GPU has fallen off the bus"},
	54:  {ActionHardwareRepair, "auxiliary power not connected"},
}

// ClassifyXID returns the action an XID needs and a short description. The driver's own
// recommendation wins wherever the driver gives one other than "none", since it knows the
// failed unit; a "none" or unknown driver answer falls back to the table, because older
// drivers answer "none" for every XID.
func ClassifyXID(xid uint64, driver DriverAction) (Action, string) {
	class, known := xidTable[xid]
	what := class.what
	if !known {
		what = "unclassified XID"
	}
	desc := fmt.Sprintf("XID %d (%s)", xid, what)
	if a, ok := driverActions[driver]; ok && driver != DriverActionNone {
		return a, desc + ", driver recommends " + a.String()
	}
	return class.action, desc
}
