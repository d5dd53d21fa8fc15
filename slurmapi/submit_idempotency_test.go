package slurmapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestIdempotencyKeyHeader(t *testing.T) {
	tests := []struct {
		name, key  string
		wantStatus int // 0: accepted
	}{
		{"none", "", 0},
		{"uuid", "6f1c1e52-8d0e-4f4e-9a51-0d3c1c2b7a10", 0},
		{"printable with spaces", "nightly run 42", 0},
		{"at the limit", strings.Repeat("k", maxIdempotencyKey), 0},
		{"over the limit", strings.Repeat("k", maxIdempotencyKey+1), http.StatusBadRequest},
		{"control character", "a\tb", http.StatusBadRequest},
		{"not ASCII", "clé", http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/slurm/v0.0.44/job/submit", nil)
			if tc.key != "" {
				r.Header.Set(IdempotencyKeyHeader, tc.key)
			}
			key, hash, e := idempotencyKey(r, []byte(`{"script":"x"}`))
			switch {
			case tc.wantStatus != 0:
				if e == nil || e.Status != tc.wantStatus || e.Source != IdempotencyKeyHeader {
					t.Fatalf("error %+v, want status %d from %s", e, tc.wantStatus, IdempotencyKeyHeader)
				}
			case e != nil:
				t.Fatalf("refused: %+v", e)
			case key != tc.key:
				t.Errorf("key %q, want %q", key, tc.key)
			case (hash == "") != (tc.key == ""):
				t.Errorf("body hash %q with key %q", hash, tc.key)
			}
		})
	}
	// The same body hashes the same, another differently: what tells a retry
	// from a reuse of the key.
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set(IdempotencyKeyHeader, "k")
	_, a, _ := idempotencyKey(r, []byte("one"))
	_, b, _ := idempotencyKey(r, []byte("one"))
	_, c, _ := idempotencyKey(r, []byte("two"))
	if a != b || a == c {
		t.Errorf("hashes: same body %q and %q, other body %q", a, b, c)
	}
}
