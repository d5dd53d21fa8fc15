package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// What the submission benchmark reads back: the jobs a REST server lists and what the
// Sluice scheduler has seen.

// countJobs is how many jobs GET url (a jobs listing, squeue's request) lists.
func countJobs(ctx context.Context, url string, headers map[string]string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 400))
		return 0, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, raw)
	}
	var doc struct {
		Jobs []struct {
			JobID uint32 `json:"job_id"`
		} `json:"jobs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	return len(doc.Jobs), nil
}

// schedulerReading is what the server's /metrics says of its scheduler.
type schedulerReading struct {
	cycles  float64 // cycles run
	pending float64 // jobs waiting after the last cycle, every reason (held included)
	bound   float64 // pods bound or created bound so far
}

// scrapeScheduler reads the scheduler's series from the server at base.
func scrapeScheduler(ctx context.Context, base string) (schedulerReading, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return schedulerReading{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return schedulerReading{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return schedulerReading{}, err
	}
	return parseScheduler(raw), nil
}

func parseScheduler(raw []byte) schedulerReading {
	var r schedulerReading
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch {
		case name == "sluice_scheduler_cycle_duration_seconds_count":
			r.cycles = v
		case strings.HasPrefix(name, "sluice_scheduler_pending_jobs{"):
			r.pending += v
		case name == "sluice_scheduler_pods_bound_total":
			r.bound = v
		}
	}
	return r
}

// submitSite lets users submit Slurm jobs to the benchmark's queue and gives the
// benchmark's partition an image for the jobs that start.
func (h *harness) submitSite(ctx context.Context, users ...string) error {
	var p v1alpha1.Partition
	if err := h.crs.Get(ctx, client.ObjectKey{Name: poolName}, &p); err != nil {
		return fmt.Errorf("read partition %s: %w", poolName, err)
	}
	p.Spec.DefaultImage = "busybox"
	if err := h.crs.Update(ctx, &p); err != nil {
		return fmt.Errorf("give partition %s an image: %w", poolName, err)
	}
	var q v1alpha1.Queue
	if err := h.crs.Get(ctx, client.ObjectKey{Name: benchQueue}, &q); err != nil {
		return fmt.Errorf("read queue %s: %w", benchQueue, err)
	}
	q.Spec.Users = users
	if err := h.crs.Update(ctx, &q); err != nil {
		return fmt.Errorf("add the benchmark's users to queue %s: %w", benchQueue, err)
	}
	return nil
}

// mustJSON encodes v, which is always encodable (maps of strings, numbers and bools).
func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}
