package health

import (
	"testing"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Which pods a fault on GPU 3 (GPU-c) reaches, read from their annotations as the drain does.
func TestAssignmentUses(t *testing.T) {
	bad := []GPUInfo{{Index: 3, UUID: "GPU-c"}}
	tests := []struct {
		name    string
		value   *string
		wantOK  bool
		wantErr bool
		uses    bool
	}{
		{"no annotation", nil, false, false, false},
		{"whole GPU by uuid", ptr(`{"gpus":[{"index":0,"uuid":"GPU-c"}]}`), true, false, true},
		{"other GPU", ptr(`{"gpus":[{"index":3,"uuid":"GPU-d"}]}`), true, false, false},
		{"index only matches by index", ptr(`{"gpus":[{"index":3}],"portion":0.5}`), true, false, true},
		{"malformed", ptr(`{"gpus":`), true, true, false},
		{"portion out of range", ptr(`{"gpus":[{"index":3}],"portion":2}`), true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ann := map[string]string{}
			if tt.value != nil {
				ann[v1alpha1.GPUAssignmentAnnotation] = *tt.value
			}
			a, ok, err := v1alpha1.GPUAssignmentOf(ann)
			if ok != tt.wantOK || (err != nil) != tt.wantErr {
				t.Fatalf("ok=%v err=%v, want ok=%v err=%v", ok, err, tt.wantOK, tt.wantErr)
			}
			if err == nil && AssignmentUses(a, bad) != tt.uses {
				t.Errorf("Uses = %v, want %v", !tt.uses, tt.uses)
			}
		})
	}
}

func TestGPUsAnnotationRoundTrip(t *testing.T) {
	in := []GPUInfo{{Index: 0, UUID: "GPU-a", Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, Healthy: true}, {Index: 1, UUID: "GPU-b", Healthy: false}}
	out, err := ParseGPUs(FormatGPUs(in))
	if err != nil || len(out) != 2 || out[0] != in[0] || out[1] != in[1] {
		t.Fatalf("round trip = %+v, %v", out, err)
	}
	if _, err := ParseGPUs("not json"); err == nil {
		t.Error("malformed annotation must be an error")
	}
}

func ptr(s string) *string { return &s }
