package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// peers sends signed requests to the job's launchers.
type peers struct {
	job  *Job
	key  []byte
	http *http.Client
}

func newPeers(job *Job) (*peers, error) {
	key, err := job.key()
	if err != nil {
		return nil, err
	}
	return &peers{job: job, key: key, http: &http.Client{}}, nil
}

// post sends v to node's launcher; the caller closes the answer's body.
func (p *peers) post(ctx context.Context, node int, path string, v any) (*http.Response, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	addr := p.job.Peers[node]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	sign(req, p.key, body, time.Now())
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("launcher of node %s (%s): %w", p.job.Hosts[node], addr, err)
	}
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("launcher of node %s: %s: %s", p.job.Hosts[node], resp.Status, bytes.TrimSpace(msg))
	}
	return resp, nil
}

// postWhenUp is post, retried while the node's launcher cannot be
// reached (its pod still starting: a job's pods start in parallel and the
// batch host may be first) for at most wait.
func (p *peers) postWhenUp(ctx context.Context, node int, path string, v any, wait time.Duration) (*http.Response, error) {
	return whenUp(ctx, wait, func() (*http.Response, error) { return p.post(ctx, node, path, v) })
}

// whenUp calls try until it succeeds, fails other than by a failed dial, or
// wait has passed, pausing 50 ms doubling to 2 s between tries. Only a
// failed dial is retried: a request that reached a launcher is never sent
// twice.
func whenUp[T any](ctx context.Context, wait time.Duration, try func() (T, error)) (T, error) {
	deadline := time.Now().Add(wait)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		got, err := try()
		var oe *net.OpError
		if err == nil || !errors.As(err, &oe) || oe.Op != "dial" || time.Now().After(deadline) {
			return got, err
		}
		select {
		case <-ctx.Done():
			var none T
			return none, err
		case <-time.After(delay):
		}
	}
}

// launchWait is how long srun and the batch host wait for a node's
// launcher to come up.
const launchWait = 5 * time.Minute

// call is post for requests whose answer has no body worth reading.
func (p *peers) call(ctx context.Context, node int, path string, v any) error {
	resp, err := p.post(ctx, node, path, v)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
