package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/remediation/health"
)

// watchedEvents are the NVML events that call for a look at once instead of at the next poll.
const watchedEvents = uint64(nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError)

// watchEvents registers every GPU for XID and double-bit ECC events and waits on them until
// ctx ends. Each XID is sent on xids; any other event (or a GPU lost while waiting) sends on
// poke so the agent re-reads the GPUs. It returns an error when events cannot be used at
// all; the agent then relies on polling.
func watchEvents(ctx context.Context, lib nvml.Interface, wait time.Duration, xids chan<- health.XIDRecord, poke chan<- struct{}) error {
	set, ret := lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("NVML event set: %v", ret)
	}
	defer set.Free()
	registered, err := registerAll(lib, set)
	if err != nil {
		return err
	}
	if registered == 0 {
		return fmt.Errorf("no GPU supports XID events")
	}
	for ctx.Err() == nil {
		data, ret := set.Wait(uint32(wait.Milliseconds()))
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_TIMEOUT:
			continue
		case nvml.ERROR_GPU_IS_LOST:
			send(ctx, poke, struct{}{})
			continue
		default:
			return fmt.Errorf("NVML event wait: %v", ret)
		}
		if data.EventType&nvml.EventTypeXidCriticalError == 0 {
			send(ctx, poke, struct{}{})
			continue
		}
		send(ctx, xids, xidRecord(data, time.Now()))
	}
	return nil
}

func registerAll(lib nvml.Interface, set nvml.EventSet) (int, error) {
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return 0, fmt.Errorf("NVML device count: %v", ret)
	}
	registered := 0
	for i := 0; i < count; i++ {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue // a lost GPU is found by the poll
		}
		supported, ret := dev.GetSupportedEventTypes()
		if ret != nvml.SUCCESS || supported&watchedEvents == 0 {
			continue
		}
		if dev.RegisterEvents(supported&watchedEvents, set) == nvml.SUCCESS {
			registered++
		}
	}
	return registered, nil
}

func xidRecord(data nvml.EventData, at time.Time) health.XIDRecord {
	rec := health.XIDRecord{GPU: -1, XID: data.EventData, Driver: health.DriverActionUnknown, At: at}
	if data.Device == nil {
		return rec
	}
	if uuid, ret := data.Device.GetUUID(); ret == nvml.SUCCESS {
		rec.UUID = uuid
	}
	if index, ret := data.Device.GetIndex(); ret == nvml.SUCCESS {
		rec.GPU = index
	}
	rec.Driver = driverAction(data.Device)
	return rec
}

func send[T any](ctx context.Context, ch chan<- T, v T) {
	select {
	case ch <- v:
	case <-ctx.Done():
	}
}
