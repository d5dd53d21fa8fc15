package servermem

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ProfileEnv names a path prefix: when set, `sluice server` writes its heap profile at
// the largest live heap it reaches (PREFIX.PID) and, as it stops, its API requests and
// those answered 429 (PREFIX.PID.requests). The scale benchmark sets it for the memory
// by owner in docs/benchmarks.md; the harness's server processes inherit it.
const ProfileEnv = "SLUICE_HEAP_PROFILE"

// StartProfile starts what ProfileEnv asks for; the returned stop writes the
// request counts. Without it, it does nothing.
func StartProfile() (stop func()) {
	prefix := os.Getenv(ProfileEnv)
	if prefix == "" {
		return func() {}
	}
	path := fmt.Sprintf("%s.%d", prefix, os.Getpid())
	ctx, cancel := context.WithCancel(context.Background())
	go profileHeapPeak(ctx, path)
	return func() {
		cancel()
		if f, err := os.Create(path + ".requests"); err == nil {
			writeRequestCounts(f)
			f.Close()
		}
	}
}

// profileHeapPeak writes the heap profile to path each time the live heap grows 5% past
// the largest seen, until ctx ends.
func profileHeapPeak(ctx context.Context, path string) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		if now := sample[0].Value.Uint64(); now > peak+peak/20 {
			peak = now
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
	}
}

// writeRequestCounts writes how many API requests the server made and how many were
// answered 429 (the API server's priority and fairness, or a storage not ready), by
// method, from client-go's request counts.
func writeRequestCounts(w io.Writer) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		fmt.Fprintf(w, "reading client metrics: %v\n", err)
		return
	}
	var total, refused float64
	byMethod := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "rest_client_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			n := m.GetCounter().GetValue()
			total += n
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["code"] == "429" {
				refused += n
				byMethod[labels["method"]] += n
			}
		}
	}
	fmt.Fprintf(w, "%.0f API requests, %.0f answered 429 %v\n", total, refused, byMethod)
	refusals.write(w)
}

// refusals keeps, while ProfileEnv is set, each API request answered 429: its time,
// method, path and Retry-After, so a benchmark's request counts say which requests
// priority and fairness, or a watch cache still starting, turned away.
var refusals refusalLog

type refusalLog struct {
	mu    sync.Mutex
	lines []string
}

// refusalLogMax bounds what a long run keeps.
const refusalLogMax = 100

// WrapRefusals is the rest.Config wrapper that records 429s into refusals.
func WrapRefusals(next http.RoundTripper) http.RoundTripper { return refusalRecorder{next} }

type refusalRecorder struct{ next http.RoundTripper }

func (r refusalRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		refusals.add(fmt.Sprintf("%s %s %s Retry-After=%q",
			time.Now().UTC().Format(time.RFC3339Nano), req.Method, req.URL.RequestURI(), resp.Header.Get("Retry-After")))
	}
	return resp, err
}

func (l *refusalLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) < refusalLogMax {
		l.lines = append(l.lines, line)
	}
}

func (l *refusalLog) write(w io.Writer) {
	l.mu.Lock()
	lines := append([]string(nil), l.lines...)
	l.mu.Unlock()
	sort.Strings(lines)
	if len(lines) > 0 {
		fmt.Fprintf(w, "answered 429:\n  %s\n", strings.Join(lines, "\n  "))
	}
}
