package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Submit sends a job description (v0.0.44 job_desc_msg fields) and returns
// the new job id and the server's warnings (the descriptions of the
// answer's warnings[], such as #SBATCH directives Sluice ignores). It sends
// a fresh Idempotency-Key and, when the answer is lost (the connection
// dropped, a replica died) or is a server fault, sends the same submission
// again with the same key: the server answers a retry with the first
// attempt's job, so a job is never submitted twice.
func (c *Client) Submit(ctx context.Context, job map[string]any) (uint32, []string, error) {
	key, err := NewIdempotencyKey()
	if err != nil {
		return 0, nil, err
	}
	var id uint32
	var warnings []string
	for attempt := 0; ; attempt++ {
		id, warnings, err = c.SubmitWithKey(ctx, key, job)
		if err == nil || attempt+1 >= len(submitRetryWaits) || !retryable(err) {
			return id, warnings, err
		}
		select {
		case <-ctx.Done():
			return 0, nil, err
		case <-time.After(submitRetryWaits[attempt]):
		}
	}
}

// submitRetryWaits are the pauses between Submit's attempts: long enough for
// a standby replica to take over or an API server to restart.
var submitRetryWaits = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}

// retryable reports whether a failed submission may be sent again: its
// answer never came, or the server failed (5xx). A refusal (4xx) stands.
func retryable(err error) bool {
	var api *APIError
	if errors.As(err, &api) {
		return api.Status >= 500
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// SubmitWithKey is one submission attempt carrying key as its
// Idempotency-Key (a Sluice extension): any number of attempts with one key
// by one user store one job, and each gets its id.
func (c *Client) SubmitWithKey(ctx context.Context, key string, job map[string]any) (uint32, []string, error) {
	var out struct {
		JobID    uint32 `json:"job_id"`
		Warnings []struct {
			Description string `json:"description"`
		} `json:"warnings"`
	}
	h := http.Header{}
	if key != "" {
		h.Set(IdempotencyKeyHeader, key)
	}
	if err := c.doWith(ctx, "POST", "/slurm/"+Version+"/job/submit", nil, h, map[string]any{"job": job}, &out); err != nil {
		return 0, nil, err
	}
	var warnings []string
	for _, w := range out.Warnings {
		warnings = append(warnings, w.Description)
	}
	return out.JobID, warnings, nil
}

// IdempotencyKeyHeader is the header SubmitWithKey sets (slurmapi's
// IdempotencyKeyHeader; the client imports nothing of the server).
const IdempotencyKeyHeader = "Idempotency-Key"

// NewIdempotencyKey is a random key, as unique as a UUID.
func NewIdempotencyKey() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("idempotency key: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// TestOnlyHeader is slurmapi's TestOnlyHeader: job/submit checks the job and stores
// nothing.
const TestOnlyHeader = "X-Sluice-Test-Only"

// TestSubmit is sbatch --test-only: the server checks job as it would a submission and
// stores nothing. It answers what sbatch prints (where the job would wait) and the
// warnings a submission would get.
func (c *Client) TestSubmit(ctx context.Context, job map[string]any) (string, []string, error) {
	var out struct {
		Message  string `json:"job_submit_user_msg"`
		Warnings []struct {
			Description string `json:"description"`
		} `json:"warnings"`
	}
	h := http.Header{}
	h.Set(TestOnlyHeader, "true")
	if err := c.doWith(ctx, "POST", "/slurm/"+Version+"/job/submit", nil, h, map[string]any{"job": job}, &out); err != nil {
		return "", nil, err
	}
	var warnings []string
	for _, w := range out.Warnings {
		warnings = append(warnings, w.Description)
	}
	return out.Message, warnings, nil
}
