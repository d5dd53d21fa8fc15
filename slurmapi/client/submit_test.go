package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestSubmitRetriesWithOneKey: a submission whose connection drops before
// the answer, then one answered 503, is sent again with the same
// Idempotency-Key until answered; a refusal (4xx) is not retried.
func TestSubmitRetriesWithOneKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	refuse := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get(IdempotencyKeyHeader))
		n := len(keys)
		mu.Unlock()
		switch {
		case refuse:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"errors":[{"description":"no such partition"}]}`))
		case n == 1: // the answer is lost: the connection drops
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case n == 2:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			_, _ = w.Write([]byte(`{"job_id":42}`))
		}
	}))
	defer srv.Close()
	c := &Client{URL: srv.URL, Token: "t", HTTP: srv.Client()}

	id, _, err := c.Submit(context.Background(), map[string]any{"script": "#!/bin/sh\n"})
	if err != nil || id != 42 {
		t.Fatalf("Submit: job %d, %v; want 42", id, err)
	}
	if len(keys) != 3 || keys[0] == "" || keys[1] != keys[0] || keys[2] != keys[0] {
		t.Errorf("attempts carried keys %q, want three attempts with one key", keys)
	}

	keys, refuse = nil, true
	if _, _, err := c.Submit(context.Background(), map[string]any{"script": "#!/bin/sh\n"}); !IsBadRequest(err) {
		t.Errorf("refused submission: %v, want the 400", err)
	}
	if len(keys) != 1 {
		t.Errorf("a refused submission was sent %d times, want once", len(keys))
	}
}
