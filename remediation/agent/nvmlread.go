package agent

import (
	"encoding/binary"
	"errors"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/remediation/health"
)

// errLost marks a GPU that answered ERROR_GPU_IS_LOST to any query.
var errLost = errors.New("GPU is lost")

// readGPUs reads every GPU NVML enumerates. known is the last inventory, so GPUs that no
// longer enumerate (or fewer than expected) are reported lost under their old identity.
func readGPUs(lib nvml.Interface, expected int, known []health.GPUInfo) ([]health.GPUReading, error) {
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	var out []health.GPUReading
	for i := 0; i < count; i++ {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret == nvml.ERROR_GPU_IS_LOST {
			out = append(out, lostGPU(i, known))
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, ret
		}
		g, err := readGPU(i, dev)
		if errors.Is(err, errLost) {
			g = lostGPU(i, known)
		}
		out = append(out, g)
	}
	for i := count; i < max(expected, len(known)); i++ {
		out = append(out, lostGPU(i, known))
	}
	return out, nil
}

func lostGPU(index int, known []health.GPUInfo) health.GPUReading {
	g := health.GPUReading{Index: index, Lost: true}
	for _, k := range known {
		if int(k.Index) == index {
			g.UUID, g.Model, g.MemoryMiB = k.UUID, k.Model, uint64(k.MemoryMiB)
		}
	}
	if g.UUID == "" {
		g.UUID = "GPU-index-" + itoa(index)
	}
	return g
}

// reader collects one GPU's values. Values the GPU does not support are left zero, which
// Evaluate does not judge; GPU_IS_LOST from any call marks the whole GPU lost.
type reader struct{ lost bool }

func (r *reader) ok(ret nvml.Return) bool {
	if ret == nvml.ERROR_GPU_IS_LOST {
		r.lost = true
	}
	return ret == nvml.SUCCESS
}

func readGPU(index int, dev nvml.Device) (health.GPUReading, error) {
	var r reader
	g := health.GPUReading{Index: index}
	if v, ret := dev.GetUUID(); r.ok(ret) {
		g.UUID = v
	}
	if v, ret := dev.GetName(); r.ok(ret) {
		g.Model = v
	}
	if v, ret := dev.GetMemoryInfo(); r.ok(ret) {
		g.MemoryMiB = v.Total / (1 << 20)
	}
	g.NVLinks = r.nvlinks(dev)
	if v, ret := dev.GetCurrPcieLinkWidth(); r.ok(ret) {
		g.PCIe.Width = v
	}
	if v, ret := dev.GetMaxPcieLinkWidth(); r.ok(ret) {
		g.PCIe.MaxWidth = v
	}
	if v, ret := dev.GetCurrPcieLinkGeneration(); r.ok(ret) {
		g.PCIe.Gen = v
	}
	if v, ret := dev.GetMaxPcieLinkGeneration(); r.ok(ret) {
		g.PCIe.MaxGen = v
	}
	if v, ret := dev.GetUtilizationRates(); r.ok(ret) {
		g.PCIe.Busy = v.Gpu > 0
	}
	if _, _, pending, failure, ret := dev.GetRemappedRows(); r.ok(ret) {
		g.RowRemapPending, g.RowRemapFailure = pending, failure
	}
	if v, ret := dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); r.ok(ret) {
		g.VolatileDBE = v
	}
	if r.lost {
		return g, errLost
	}
	return g, nil
}

// nvlinkCounters are summed into one error count per link.
var nvlinkCounters = []nvml.NvLinkErrorCounter{
	nvml.NVLINK_ERROR_DL_REPLAY, nvml.NVLINK_ERROR_DL_RECOVERY,
	nvml.NVLINK_ERROR_DL_CRC_FLIT, nvml.NVLINK_ERROR_DL_CRC_DATA,
}

// nvlinks reads the links the GPU has: NVML answers NOT_SUPPORTED or INVALID_ARGUMENT past
// the last link (and for every link on a GPU without NVLink), which ends the scan.
func (r *reader) nvlinks(dev nvml.Device) []health.NVLinkReading {
	var out []health.NVLinkReading
	for link := 0; link < nvml.NVLINK_MAX_LINKS; link++ {
		state, ret := dev.GetNvLinkState(link)
		if !r.ok(ret) {
			break
		}
		l := health.NVLinkReading{Link: link, Up: state == nvml.FEATURE_ENABLED}
		for _, c := range nvlinkCounters {
			if v, ret := dev.GetNvLinkErrorCounter(link, c); r.ok(ret) {
				l.Errors += v
			}
		}
		out = append(out, l)
	}
	return out
}

// driverAction asks the driver which recovery it recommends now (r550+); older drivers
// answer NOT_SUPPORTED, which is DriverActionUnknown.
func driverAction(dev nvml.Device) health.DriverAction {
	values := []nvml.FieldValue{{FieldId: nvml.FI_DEV_GET_GPU_RECOVERY_ACTION}}
	if dev.GetFieldValues(values) != nvml.SUCCESS || nvml.Return(values[0].NvmlReturn) != nvml.SUCCESS {
		return health.DriverActionUnknown
	}
	return health.DriverAction(binary.LittleEndian.Uint32(values[0].Value[:4]))
}
