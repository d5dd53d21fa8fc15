package controller

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/remediation/health"
)

func TestEscalation(t *testing.T) {
	e := Escalation{SameXID: 3, XIDWindow: 24 * time.Hour, Remediations: 5, RemediationWindow: 7 * 24 * time.Hour}
	now := time.Unix(1700000000, 0)
	ago := func(d time.Duration, xids ...uint64) health.Fault {
		return health.Fault{At: now.Add(-d), Condition: "GPUXidError", XIDs: xids}
	}
	tests := []struct {
		name    string
		history []health.Fault
		want    bool
	}{
		{"one XID", []health.Fault{ago(0, 79)}, false},
		{"same XID twice", []health.Fault{ago(time.Hour, 79), ago(0, 79)}, false},
		{"same XID three times in a day", []health.Fault{ago(20*time.Hour, 79), ago(time.Hour, 79), ago(0, 79)}, true},
		{"third one a day later", []health.Fault{ago(25*time.Hour, 79), ago(time.Hour, 79), ago(0, 79)}, false},
		{"three different XIDs", []health.Fault{ago(2*time.Hour, 48), ago(time.Hour, 79), ago(0, 119)}, false},
		{"five remediations in a week", []health.Fault{ago(6 * 24 * time.Hour), ago(5 * 24 * time.Hour), ago(3 * 24 * time.Hour), ago(24 * time.Hour), ago(0)}, true},
		{"five over more than a week", []health.Fault{ago(8 * 24 * time.Hour), ago(5 * 24 * time.Hour), ago(3 * 24 * time.Hour), ago(24 * time.Hour), ago(0)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, why := e.escalates(tt.history, now); got != tt.want {
				t.Errorf("escalates = %v (%s), want %v", got, why, tt.want)
			}
		})
	}
	if kept := e.prune([]health.Fault{ago(8 * 24 * time.Hour), ago(0)}, now); len(kept) != 1 {
		t.Errorf("prune kept %d entries, want the recent one", len(kept))
	}
}
