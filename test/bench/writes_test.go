package bench

import "testing"

func TestParseWritesKeepsWritesByResource(t *testing.T) {
	raw := []byte(`# HELP apiserver_request_total x
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 40
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="namespace",subresource="",verb="POST",version="v1"} 5
apiserver_request_total{code="201",component="apiserver",dry_run="",group="resource.k8s.io",resource="resourceclaims",scope="namespace",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="APPLY",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="resource.k8s.io",resource="resourceclaims",scope="resource",subresource="",verb="PUT",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="resource.k8s.io",resource="resourceclaims",scope="resource",subresource="status",verb="PUT",version="v1"} 10
`)
	tests := []struct {
		key  string
		want float64
	}{
		{"POST pods/binding", 42},
		{"POST events", 4}, // 5 minus the 1 before
		{"LIST pods", 0},
		{"POST pods", 0}, // the benchmark's own creates
		// With claims: the resource claim controller makes them and names them in the
		// pod's status; the scheduler writes their finalizer and allocation.
		{"POST resourceclaims", 0},
		{"APPLY pods/status", 0},
		{"PUT resourceclaims", 10},
		{"PUT resourceclaims/status", 10},
	}
	got := parseWrites(raw).minus(writeCounts{"POST events": 1}).schedulerWrites()
	for _, tt := range tests {
		if got[tt.key] != tt.want {
			t.Errorf("%s = %v, want %v (all: %v)", tt.key, got[tt.key], tt.want, got)
		}
	}
}

func TestParseCPUReadsTheProcessCounter(t *testing.T) {
	raw := []byte("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 123.45\nprocess_max_fds 1024\n")
	if got := parseCPU(raw); got != 123.45 {
		t.Errorf("parseCPU = %v, want 123.45", got)
	}
	if got := parseCPU([]byte("process_max_fds 1024\n")); got != 0 {
		t.Errorf("parseCPU without the counter = %v, want 0", got)
	}
}
