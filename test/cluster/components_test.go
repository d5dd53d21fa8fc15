package cluster

import (
	"slices"
	"strings"
	"testing"
)

// A Benchmark rig runs the resource claim controller, at a rate that does not hold the
// pods back, only when a pool publishes its GPUs through DRA; a full rig runs every
// controller at the rig's usual rate.
func TestControllerManagerArgs(t *testing.T) {
	tests := []struct {
		name               string
		benchmark, dra     bool
		wantControllers    string // "" for none: every default controller
		wantQPS, wantBurst string
	}{
		{"full rig", false, false, "", "100", "200"},
		{"full rig with DRA", false, true, "", "100", "200"},
		{"benchmark", true, false, strings.Join(benchmarkControllers, ","), "100", "200"},
		{"benchmark with DRA", true, true, strings.Join(benchmarkControllers, ",") + ",resourceclaim-controller", "5000", "10000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := layout{dir: t.TempDir()}.controllerManagerArgs(pkiFiles{}, tt.benchmark, tt.dra)
			flag := func(name string) string {
				for _, a := range args {
					if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
						return v
					}
				}
				return ""
			}
			if got := flag("controllers"); got != tt.wantControllers {
				t.Errorf("--controllers=%q, want %q", got, tt.wantControllers)
			}
			if q, b := flag("kube-api-qps"), flag("kube-api-burst"); q != tt.wantQPS || b != tt.wantBurst {
				t.Errorf("--kube-api-qps=%s --kube-api-burst=%s, want %s and %s", q, b, tt.wantQPS, tt.wantBurst)
			}
		})
	}
	if slices.Contains(benchmarkControllers, "resourceclaim-controller") {
		t.Errorf("benchmarkControllers changed: %v", benchmarkControllers)
	}
}
