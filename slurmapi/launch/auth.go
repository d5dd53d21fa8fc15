package launch

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Launch requests are signed with the job's key (HMAC-SHA256 over the
// method, path, time and body digest), so the key itself never crosses
// the network and a request cannot be altered. A signature is accepted
// once, within skew of its time: a captured request cannot be replayed.
const (
	authScheme = "Sluice-HMAC "
	timeHeader = "X-Sluice-Time"
	skew       = 2 * time.Minute
)

func signature(key []byte, method, path, ts string, body []byte) string {
	digest := sha256.Sum256(body)
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s\n%s\n%s\n%s", method, path, ts, hex.EncodeToString(digest[:]))
	return hex.EncodeToString(m.Sum(nil))
}

// sign adds the signature headers to req for body.
func sign(req *http.Request, key, body []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	req.Header.Set(timeHeader, ts)
	req.Header.Set("Authorization", authScheme+signature(key, req.Method, req.URL.Path, ts, body))
}

// verifier checks signatures and remembers the ones it accepted.
type verifier struct {
	key []byte
	now func() time.Time

	mu   sync.Mutex
	seen map[string]time.Time // signature -> when it expires
}

func newVerifier(key []byte) *verifier {
	return &verifier{key: key, now: time.Now, seen: map[string]time.Time{}}
}

func (v *verifier) verify(req *http.Request, body []byte) error {
	sig, ok := strings.CutPrefix(req.Header.Get("Authorization"), authScheme)
	if !ok {
		return fmt.Errorf("no %s signature", strings.TrimSpace(authScheme))
	}
	ts := req.Header.Get(timeHeader)
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("bad %s", timeHeader)
	}
	now := v.now()
	if d := now.Sub(time.Unix(secs, 0)); d > skew || d < -skew {
		return fmt.Errorf("request time is %s off this node's clock", d.Round(time.Second))
	}
	want := signature(v.key, req.Method, req.URL.Path, ts, body)
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return fmt.Errorf("bad signature")
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for s, exp := range v.seen {
		if now.After(exp) {
			delete(v.seen, s)
		}
	}
	if _, dup := v.seen[sig]; dup {
		return fmt.Errorf("replayed request")
	}
	v.seen[sig] = now.Add(2 * skew)
	return nil
}
