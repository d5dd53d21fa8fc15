package agent

import (
	"encoding/binary"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// gpuState is what a mocked A100 reports; tests change it between polls.
type gpuState struct {
	linkDown   map[int]bool
	linkErrors uint64
	width, gen int
	busy       bool
	pending    bool
	failure    bool
	dbe        uint64
	lost       bool
	recovery   nvml.DeviceGpuRecoveryAction
}

const a100Links = 12

// newDGX returns go-nvml's DGX A100 mock with the health queries the agent makes wired to
// one gpuState per GPU, all healthy.
func newDGX() (*server.Server, []*gpuState) {
	s := dgxa100.New()
	states := make([]*gpuState, len(s.Devices))
	for i, d := range s.Devices {
		st := &gpuState{linkDown: map[int]bool{}, width: 16, gen: 4, busy: true}
		states[i] = st
		wire(d.(*server.Device), st)
	}
	return s, states
}

func wire(d *server.Device, st *gpuState) {
	ret := func() nvml.Return {
		if st.lost {
			return nvml.ERROR_GPU_IS_LOST
		}
		return nvml.SUCCESS
	}
	uuid, name, mem := d.GetUUIDFunc, d.GetNameFunc, d.GetMemoryInfoFunc
	d.GetUUIDFunc = func() (string, nvml.Return) { v, _ := uuid(); return v, ret() }
	d.GetNameFunc = func() (string, nvml.Return) { v, _ := name(); return v, ret() }
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { v, _ := mem(); return v, ret() }
	d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
		if link >= a100Links {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		if st.linkDown[link] {
			return nvml.FEATURE_DISABLED, ret()
		}
		return nvml.FEATURE_ENABLED, ret()
	}
	d.GetNvLinkErrorCounterFunc = func(link int, c nvml.NvLinkErrorCounter) (uint64, nvml.Return) {
		if c == nvml.NVLINK_ERROR_DL_REPLAY && link == 0 {
			return st.linkErrors, ret()
		}
		return 0, ret()
	}
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return st.width, ret() }
	d.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, ret() }
	d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return st.gen, ret() }
	d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 4, ret() }
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		if st.busy {
			return nvml.Utilization{Gpu: 90}, ret()
		}
		return nvml.Utilization{}, ret()
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, st.pending, st.failure, ret() }
	d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return st.dbe, ret() }
	d.GetFieldValuesFunc = func(values []nvml.FieldValue) nvml.Return {
		for i := range values {
			values[i].NvmlReturn = uint32(nvml.SUCCESS)
			binary.LittleEndian.PutUint32(values[i].Value[:4], uint32(st.recovery))
		}
		return ret()
	}
	d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return nvml.EventTypeAll, ret() }
	d.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return ret() }
}
