package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/remediation/health"
)

// eventQueue makes a mock EventSet whose Wait hands out the queued events, then times out.
func eventQueue(events ...nvml.EventData) *mock.EventSet {
	ch := make(chan nvml.EventData, len(events))
	for _, e := range events {
		ch <- e
	}
	return &mock.EventSet{
		WaitFunc: func(timeoutMs uint32) (nvml.EventData, nvml.Return) {
			select {
			case e := <-ch:
				return e, nvml.SUCCESS
			case <-time.After(time.Duration(timeoutMs) * time.Millisecond):
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
		},
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
}

func TestWatchEvents(t *testing.T) {
	lib, states := newDGX()
	states[2].recovery = nvml.GPU_RECOVERY_ACTION_NODE_REBOOT
	dev2, _ := lib.DeviceGetHandleByIndex(2)
	dev5, _ := lib.DeviceGetHandleByIndex(5)
	uuid2, _ := dev2.GetUUID()
	lib.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return eventQueue(
			nvml.EventData{Device: dev5, EventType: nvml.EventTypeDoubleBitEccError},
			nvml.EventData{Device: dev2, EventType: nvml.EventTypeXidCriticalError, EventData: 48},
		), nvml.SUCCESS
	}
	ctx, cancel := context.WithCancel(context.Background())
	xids := make(chan health.XIDRecord, 1)
	poke := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() { done <- watchEvents(ctx, lib, 20*time.Millisecond, xids, poke) }()

	select {
	case <-poke:
	case <-time.After(5 * time.Second):
		t.Fatal("a double-bit ECC event must poke the agent to re-read the GPUs")
	}
	select {
	case x := <-xids:
		if x.XID != 48 || x.GPU != 2 || x.UUID != uuid2 || x.Driver != health.DriverActionNodeReboot {
			t.Errorf("XID record %+v, want XID 48 on GPU 2 (%s) with the driver's reboot", x, uuid2)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no XID delivered")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("watchEvents after cancel: %v", err)
	}
}

func TestWatchEventsWithoutSupport(t *testing.T) {
	lib, _ := newDGX()
	lib.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return eventQueue(), nvml.SUCCESS }
	for _, d := range lib.Devices {
		d.(*server.Device).GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	}
	err := watchEvents(context.Background(), lib, time.Millisecond, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "no GPU supports XID events") {
		t.Fatalf("err = %v, want a plain 'no GPU supports XID events'", err)
	}
}

// TestHeldXIDs: a critical XID from the event loop raises GPUXidError until a repair that
// completed after it is recorded on the node; an application XID is an Event only.
func TestHeldXIDs(t *testing.T) {
	lib, _ := newDGX()
	a, rec := testAgent(Config{NodeName: "gpu-1", SysfsRoot: t.TempDir()}, lib)
	node := &corev1.Node{}
	at := time.Unix(1700000000, 0)
	dev, _ := lib.DeviceGetHandleByIndex(1)
	uuid, _ := dev.GetUUID()

	a.onXID(health.XIDRecord{GPU: 1, UUID: uuid, XID: 13, Driver: health.DriverActionUnknown, At: at})
	conds, _ := a.assess(node, at)
	assertAllFalse(t, "after application XID 13", conds)
	if e := <-rec.Events; !strings.Contains(e, "GPUXidApplication") || !strings.Contains(e, "XID 13") {
		t.Errorf("event %q, want an application XID event", e)
	}

	a.onXID(health.XIDRecord{GPU: 1, UUID: uuid, XID: 79, Driver: health.DriverActionUnknown, At: at})
	if e := <-rec.Events; !strings.Contains(e, "XID 79") || !strings.Contains(e, uuid) {
		t.Errorf("event %q, want XID 79 naming %s", e, uuid)
	}
	for i, when := range []string{"first poll", "later poll"} {
		conds, gpus := a.assess(node, at.Add(time.Duration(i)*time.Minute))
		c := conditionOf(conds, health.GPUXidError)
		if c.Status != corev1.ConditionTrue || c.Reason != health.ActionNodeReboot.Reason() || !strings.Contains(c.Message, uuid) {
			t.Fatalf("%s: GPUXidError = %s/%s %q", when, c.Status, c.Reason, c.Message)
		}
		if gpus[1].Healthy {
			t.Errorf("%s: GPU 1 must be unhealthy", when)
		}
	}

	stale := at.Add(-time.Hour)
	node.Annotations = map[string]string{health.RepairAnnotation: health.RepairRequest{Action: "NodeReboot", CompletedAt: &stale}.Format()}
	if c := conditionOf(first(a.assess(node, at)), health.GPUXidError); c.Status != corev1.ConditionTrue {
		t.Errorf("a repair completed before the XID must not clear it")
	}
	done := at.Add(time.Minute)
	node.Annotations = map[string]string{health.RepairAnnotation: health.RepairRequest{Action: "NodeReboot", CompletedAt: &done}.Format()}
	assertAllFalse(t, "after the repair completed", first(a.assess(node, done)))
}

func first[A, B any](a A, _ B) A { return a }
