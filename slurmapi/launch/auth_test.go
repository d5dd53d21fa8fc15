package launch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// TestLaunchRefusesBadSignatures: the launcher accepts a request signed
// with the job's key once; another job's key, an altered body, a stale
// time, no signature and a replay are refused.
func TestLaunchRefusesBadSignatures(t *testing.T) {
	key, other := []byte("0123456789abcdef0123456789abcdef"), []byte("fedcba9876543210fedcba9876543210")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	v := newVerifier(key)
	v.now = func() time.Time { return now }
	req := func(body string, k []byte, at time.Time) (*http.Request, []byte) {
		r := httptest.NewRequest(http.MethodPost, pathLaunch, bytes.NewReader([]byte(body)))
		if k != nil {
			sign(r, k, []byte(body), at)
		}
		return r, []byte(body)
	}
	good, body := req(`{"step":0}`, key, now)
	if err := v.verify(good, body); err != nil {
		t.Fatalf("a good request was refused: %v", err)
	}
	if err := v.verify(good, body); err == nil {
		t.Error("a replayed request was accepted")
	}
	altered, _ := req(`{"step":0}`, key, now.Add(time.Second))
	if err := v.verify(altered, []byte(`{"step":1}`)); err == nil {
		t.Error("an altered body was accepted")
	}
	for name, r := range map[string]*http.Request{
		"another job's key": func() *http.Request { r, _ := req(`{"step":0}`, other, now.Add(2*time.Second)); return r }(),
		"a stale time":      func() *http.Request { r, _ := req(`{"step":0}`, key, now.Add(-10*time.Minute)); return r }(),
		"no signature":      func() *http.Request { r, _ := req(`{"step":0}`, nil, now); return r }(),
	} {
		if err := v.verify(r, []byte(`{"step":0}`)); err == nil {
			t.Errorf("%s was accepted", name)
		}
	}
}

// TestPlantedKeyIsRefused: a key file whose SHA-256 is not the one the
// pod's spec carries (a Secret planted under the job's name before the
// job existed) is refused; the key Sluice made is read.
func TestPlantedKeyIsRefused(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/key"
	made := "0123456789abcdef0123456789abcdef"
	sum := sha256.Sum256([]byte(made))
	job := &Job{ID: "7", KeyFile: file, KeySHA256: hex.EncodeToString(sum[:])}
	for content, ok := range map[string]bool{made + "\n": true, "planted-by-a-tenant-0123456789": false} {
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		k, err := job.key()
		if ok && (err != nil || string(k) != made) {
			t.Errorf("Sluice's key refused: %v", err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "not the key Sluice made")) {
			t.Errorf("planted key: %v, want it refused", err)
		}
	}
}
