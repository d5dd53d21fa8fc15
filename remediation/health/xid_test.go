package health

import "testing"

func TestClassifyXID(t *testing.T) {
	tests := []struct {
		name   string
		xid    uint64
		driver DriverAction
		want   Action
	}{
		{"application page fault is event only", 31, DriverActionUnknown, ActionNone},
		{"graphics exception is event only", 13, DriverActionUnknown, ActionNone},
		{"channel reset is event only", 43, DriverActionUnknown, ActionNone},
		{"preemptive cleanup is event only", 45, DriverActionUnknown, ActionNone},
		{"video decoder is event only", 68, DriverActionUnknown, ActionNone},
		{"double-bit ECC needs reset", 48, DriverActionUnknown, ActionGPUReset},
		{"micro-controller halt needs reset", 62, DriverActionUnknown, ActionGPUReset},
		{"row remap failure XID needs reset", 64, DriverActionUnknown, ActionGPUReset},
		{"NVLink XID needs reset", 74, DriverActionUnknown, ActionGPUReset},
		{"uncontained ECC needs reset", 95, DriverActionUnknown, ActionGPUReset},
		{"context switch timeout needs reset", 109, DriverActionUnknown, ActionGPUReset},
		{"GSP timeout needs reset", 119, DriverActionUnknown, ActionGPUReset},
		{"GSP error needs reset", 120, DriverActionUnknown, ActionGPUReset},
		{"fallen off the bus needs reboot", 79, DriverActionUnknown, ActionNodeReboot},
		{"unknown XID is only reported", 9999, DriverActionUnknown, ActionNone},
		{"driver reboot overrides table reset", 48, DriverActionNodeReboot, ActionNodeReboot},
		{"driver reset raises an application XID", 13, DriverActionGPUReset, ActionGPUReset},
		{"driver drain-and-reset is a reset", 9999, DriverActionDrainAndReset, ActionGPUReset},
		{"driver system reboot is a reboot", 119, DriverActionSystemReboot, ActionNodeReboot},
		{"driver none does not lower the table", 79, DriverActionNone, ActionNodeReboot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, desc := ClassifyXID(tt.xid, tt.driver)
			if got != tt.want {
				t.Fatalf("ClassifyXID(%d, %d) = %v (%s), want %v", tt.xid, tt.driver, got, desc, tt.want)
			}
		})
	}
}

func TestActionFromReason(t *testing.T) {
	tests := []struct {
		reason string
		want   Action
		ok     bool
	}{
		{ActionGPUReset.Reason(), ActionGPUReset, true},
		{ActionNodeReboot.Reason(), ActionNodeReboot, true},
		{ActionHardwareRepair.Reason(), ActionHardwareRepair, true},
		{ActionLinkService.Reason(), ActionLinkService, true},
		{ReasonHealthy, ActionNone, false},
		{"Required", ActionNone, false},
		{"BogusRequired", ActionNone, false},
	}
	for _, tt := range tests {
		got, ok := ActionFromReason(tt.reason)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ActionFromReason(%q) = %v, %v; want %v, %v", tt.reason, got, ok, tt.want, tt.ok)
		}
	}
}
