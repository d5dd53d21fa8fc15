package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// submitTarget is one REST server the submission load is sent to: where, as whom, and
// the body of submission i in the dialect that server speaks.
type submitTarget struct {
	url     string // the job/submit endpoint
	headers map[string]string
	body    func(i int) []byte
}

// submitLoad is what one load run measured.
type submitLoad struct {
	acked    int
	failed   int
	firstErr string
	took     time.Duration // first request sent to last answer
	latency  []time.Duration
	ids      []uint32 // the acknowledged job ids
}

// sendSubmissions sends n submissions from clients goroutines, each with a keep-alive
// connection of its own (as a workflow engine's workers would), each sending its next
// submission as soon as the last is answered.
func sendSubmissions(ctx context.Context, t submitTarget, n, clients int) submitLoad {
	var (
		next    atomic.Int64
		mu      sync.Mutex
		out     submitLoad
		wg      sync.WaitGroup
		started = time.Now()
	)
	out.latency = make([]time.Duration, 0, n)
	out.ids = make([]uint32, 0, n)
	for range clients {
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}, Timeout: time.Minute}
		wg.Go(func() {
			defer hc.CloseIdleConnections()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				id, err := submitOne(ctx, hc, t, i)
				took := time.Since(t0)
				mu.Lock()
				if err != nil {
					out.failed++
					if out.firstErr == "" {
						out.firstErr = err.Error()
					}
				} else {
					out.acked++
					out.latency = append(out.latency, took)
					out.ids = append(out.ids, id)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	out.took = time.Since(started)
	slices.Sort(out.latency)
	return out
}

// submitOne posts submission i and returns its job id. A job id in a 200 answer is an
// acknowledgement even with an errors[] entry: slurmrestd reports a held job's hold so.
func submitOne(ctx context.Context, hc *http.Client, t submitTarget, i int) (uint32, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(t.body(i)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var doc struct {
		JobID uint32 `json:"job_id"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &doc) != nil || doc.JobID == 0 {
		return 0, fmt.Errorf("submission %d: %d %s", i, resp.StatusCode, bytes.TrimSpace(raw[:min(len(raw), 400)]))
	}
	return doc.JobID, nil
}

// quantile is the q-quantile of the acknowledged submissions' latencies.
func (l submitLoad) quantile(q float64) time.Duration {
	if len(l.latency) == 0 {
		return 0
	}
	return l.latency[min(len(l.latency)-1, int(q*float64(len(l.latency))))]
}
