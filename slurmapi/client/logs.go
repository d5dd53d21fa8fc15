package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// LogOptions pick what JobLog reads: Follow streams until the job ends;
// Stream is "stdout", "stderr" or "" for both; Node is the task's node
// index (0: the batch host).
type LogOptions struct {
	Follow bool
	Stream string
	Node   int
}

// JobLog opens a job's output (the server's /sluice/v1/job/{id}/log). The
// caller closes it. Following has no client-side time limit.
func (c *Client) JobLog(ctx context.Context, ref string, o LogOptions) (io.ReadCloser, error) {
	q := url.Values{}
	if o.Follow {
		q.Set("follow", "true")
	}
	if o.Stream != "" {
		q.Set("stream", o.Stream)
	}
	if o.Node > 0 {
		q.Set("node", strconv.Itoa(o.Node))
	}
	u := c.URL + "/sluice/v1/job/" + url.PathEscape(ref) + "/log"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-SLURM-USER-TOKEN", c.Token)
	hc := *c.HTTP
	if o.Follow {
		hc.Timeout = 0
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the Sluice server at %s: %w", c.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, apiError(resp.StatusCode, data)
	}
	return resp.Body, nil
}
