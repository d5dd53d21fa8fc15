package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// writeCounts are apiserver_request_total's write requests keyed "VERB resource[/sub]".
type writeCounts map[string]float64

var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "APPLY": true, "DELETECOLLECTION": true}

// apiServerReading is what one scrape of the API server's /metrics tells: its write
// requests so far and its process CPU seconds.
type apiServerReading struct {
	writes writeCounts
	cpu    float64
}

// scrapeAPIServer reads the API server's /metrics with the admin client.
func scrapeAPIServer(ctx context.Context, kube kubernetes.Interface) (apiServerReading, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiServerReading{}, fmt.Errorf("scrape kube-apiserver metrics: %w", err)
	}
	return apiServerReading{writes: parseWrites(raw), cpu: parseCPU(raw)}, nil
}

// parseCPU is process_cpu_seconds_total, 0 when absent.
func parseCPU(raw []byte) float64 {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "process_cpu_seconds_total "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return 0
}

func parseWrites(raw []byte) writeCounts {
	out := writeCounts{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labelText, valueText, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		labels := parseLabels(labelText)
		if !writeVerbs[labels["verb"]] {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(valueText), 64)
		if err != nil {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		out[key] += v
	}
	return out
}

// parseLabels splits a Prometheus label set; values in these metrics hold no commas or
// escaped quotes.
func parseLabels(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			m[k] = strings.Trim(v, `"`)
		}
	}
	return m
}

func (w writeCounts) minus(before writeCounts) writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// notTheScheduler are writes some other party makes in every run, the bare binder's
// included: the benchmark's pod creates and namespaces, kwok's pod and node status, node
// patches and leases; with Options.Claims, the resource claim controller's: the claims it
// makes from templates, the pod status that names them, and its deletes of the claims of
// pods that end (evicted in a reclaim). Events stay counted although kwok
// posts some too (the bare binder's row shows how many), since a scheduler's own Events
// are part of its cost; so do a scheduler's writes of a claim (its finalizer, its
// allocation).
var notTheScheduler = map[string]bool{
	"POST pods": true, "PATCH pods/status": true, "PUT pods/status": true,
	"PATCH nodes": true, "PATCH nodes/status": true, "PUT nodes/status": true, "PUT leases": true, "PATCH leases": true,
	"POST namespaces": true, "POST serviceaccounts": true, "POST configmaps": true, "POST secrets": true,
	"POST resourceclaims": true, "APPLY pods/status": true, "DELETE resourceclaims": true,
}

// schedulerWrites drops notTheScheduler.
func (w writeCounts) schedulerWrites() map[string]float64 {
	out := map[string]float64{}
	for k, v := range w {
		if !notTheScheduler[k] {
			out[k] = v
		}
	}
	return out
}
