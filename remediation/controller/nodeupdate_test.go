package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sluicehq/sluice/remediation/health"
)

func TestTaintReason(t *testing.T) {
	tests := []struct {
		name   string
		faults []activeFault
		want   string
	}{
		{"one XID", []activeFault{{Type: string(health.GPUXidError), XIDs: []uint64{79}}}, "GPUXidError-XID79"},
		{"several classes, in a stable order", []activeFault{
			{Type: string(health.InfiniBandDegraded)},
			{Type: string(health.GPUXidError), XIDs: []uint64{48, 79}},
		}, "GPUXidError-XID48-XID79_InfiniBandDegraded"},
		{"characters a taint value refuses", []activeFault{{Type: "vendor/Overheat"}}, "vendor-Overheat"},
		{"too long for a taint value", []activeFault{{Type: strings.Repeat("GPULost", 10)}}, strings.Repeat("GPULost", 9)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := taintReason(tt.faults)
			if got != tt.want {
				t.Errorf("taintReason = %q, want %q", got, tt.want)
			}
			if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
				t.Errorf("%q is not a valid taint value: %v", got, errs)
			}
		})
	}
}
