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
	// IBDevices are the host channel adapters the ports belong to.
	IBDevices []IBDevice
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
	// LinkLayer is "InfiniBand" or "Ethernet" (RoCE); empty when sysfs does not say.
	LinkLayer string
	// Counters are the port's error counters; nil when the port has none in sysfs.
	Counters *IBCounters
}

// Name is the port as messages and Expectations.IBPortRates name it: "mlx5_0/1".
func (p IBPort) Name() string { return p.Device + "/" + p.Port }

// IBCounters are a port's error counters (ports/<p>/counters). They only grow, until the
// fabric manager or a reboot clears them; a drop is read as a reset, not as a fault.
type IBCounters struct {
	// LinkDowned counts the times the link went down and had to retrain.
	LinkDowned uint64
	// SymbolErrors counts bit errors on the wire: a failing cable or transceiver.
	SymbolErrors uint64
}

// IBDevice is one host channel adapter (/sys/class/infiniband/<Name>).
type IBDevice struct {
	Name string
	// HCAType is the adapter's model as its driver reports it (hca_type, e.g. "MT4129");
	// ports of the same model on a node should all run at the same rate.
	HCAType string
	// PCIe is the adapter's own PCIe link (device/current_link_* against max_link_*).
	PCIe PCIeLink
}

// PCIeLink is a PCIe link's width and speed, now and at most. Zero means not reported
// (a virtual function reports "Unknown") and is not judged.
type PCIeLink struct {
	Width, MaxWidth       int
	SpeedGTs, MaxSpeedGTs float64
}

// Expectations are what a healthy node looks like: what the agent has seen of it, and
// what an operator configured on top.
type Expectations struct {
	// IBPorts is the number of InfiniBand ports the node must have (the most the agent has
	// seen, or more if configured); 0 skips the count check.
	IBPorts int
	// IBRateGbps is a configured floor for every port's rate; 0 leaves the rate to be
	// judged against the HCA's (see IBPortRates).
	IBRateGbps float64
	// IBPortRates is the best rate each port (by IBPort.Name) has run at since the agent
	// started: a port that falls below it has been downgraded.
	IBPortRates map[string]float64
	// IBSymbolErrors is how many symbol errors a port may gain between two polls before
	// its link counts as degraded.
	IBSymbolErrors uint64
}
