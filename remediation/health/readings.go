package health

import "time"

// Readings is one poll of a node's GPUs and InfiniBand ports, gathered by the agent from
// NVML and sysfs (or from the fault-injection source on simulated nodes).
type Readings struct {
	// NVMLError is set when NVML could not be used at all (no driver, no library); the GPU
	// conditions are then Unknown rather than False.
	NVMLError string
	GPUs      []GPUReading
	// XIDs are the critical XIDs still held against a GPU (see agent: held until a repair
	// completes or the agent restarts with the node).
	XIDs []XIDRecord
	// IBError is set when the InfiniBand sysfs tree could not be read; the InfiniBand
	// condition is then Unknown.
	IBError string
	IBPorts []IBPort
}

// GPUReading is one GPU's state.
type GPUReading struct {
	Index     int
	UUID      string
	Model     string
	MemoryMiB uint64
	// Lost: NVML answered GPU_IS_LOST, or the GPU no longer enumerates.
	Lost    bool
	NVLinks []NVLinkReading
	PCIe    PCIeReading
	// RowRemapPending: a row remap waits for a GPU reset to take effect.
	RowRemapPending bool
	// RowRemapFailure: the remapper ran out of spare rows; the memory needs repair.
	RowRemapFailure bool
	// VolatileDBE counts uncorrected (double-bit) ECC errors since the last driver load.
	VolatileDBE uint64
}

// NVLinkReading is one NVLink of a GPU. Errors sums the link's replay, recovery and CRC
// counters; a growing sum between polls means the link is degrading.
type NVLinkReading struct {
	Link   int
	Up     bool
	Errors uint64
}

// PCIeReading is a GPU's PCIe link. Zero values mean "not reported" and are not judged.
type PCIeReading struct {
	Width, MaxWidth int
	Gen, MaxGen     int
	// Busy: the GPU had work in the last sample. Idle GPUs lower their link generation to
	// save power, so a low generation only counts while busy.
	Busy bool
}

// XIDRecord is one critical XID event.
type XIDRecord struct {
	GPU    int
	UUID   string
	XID    uint64
	Driver DriverAction
	At     time.Time
}

// IBPort is one port under /sys/class/infiniband/<Device>/ports/<Port>.
type IBPort struct {
	Device    string
	Port      string
	State     string // e.g. "ACTIVE" (from "4: ACTIVE")
	PhysState string // e.g. "LinkUp" (from "5: LinkUp")
	RateGbps  float64
}

// Expectations are what a healthy node of this model looks like.
type Expectations struct {
	// IBPorts is the number of InfiniBand ports the node must have; 0 skips the count check.
	IBPorts int
	// IBRateGbps is the lowest acceptable port rate; 0 skips the rate check.
	IBRateGbps float64
}
