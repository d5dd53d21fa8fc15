package gpureservation

import (
	"strings"
	"testing"
)

func TestDevice(t *testing.T) {
	for _, tt := range []struct {
		in, want, wantErr string
	}{
		{in: "GPU-8f0e3c1a-0000-4000-8000-000000000001", want: "GPU-8f0e3c1a-0000-4000-8000-000000000001"},
		{in: " 3\n", want: "3"},
		{in: "", wantErr: "names no GPU"},
		{in: "void", wantErr: "device plugin running"},
		{in: "none", wantErr: "names no GPU"},
		{in: "all", wantErr: "more than the one GPU"},
		{in: "GPU-a,GPU-b", wantErr: "more than the one GPU"},
	} {
		got, err := Device(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Device(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Device(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
