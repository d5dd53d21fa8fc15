package sbatch

import "testing"

func TestHostList(t *testing.T) {
	cases := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"gpu-1"}, "gpu-1"},
		{[]string{"gpu-2", "gpu-1", "gpu-3", "gpu-7"}, "gpu-[1-3,7]"},
		{[]string{"n01", "n02", "n10"}, "n[01-02,10]"},
		{[]string{"a100-1", "h100-1", "h100-2", "login"}, "a100-1,h100-[1-2],login"},
		{[]string{"gpu-1", "gpu-1"}, "gpu-1"},
	}
	for _, tc := range cases {
		if got := HostList(tc.in); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}
