package launch_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/slurmapi/launch"
)

// TestDialLauncherWaitsForItToListen: a batch host's pod is Running a
// moment before its launcher listens. An attach in that moment reaches the
// launcher once it listens; a launcher that answers with a refusal is not
// asked again, and one that never listens is reported unreachable when the
// caller gives up.
func TestDialLauncherWaitsForItToListen(t *testing.T) {
	tests := []struct {
		name     string
		startIn  time.Duration // when the launcher starts listening; <0: never
		status   int           // what it answers the handshake; 0: it upgrades
		give     time.Duration // the caller's context
		wantErr  string
		wantHits int32
	}{
		{name: "listens 300ms late", startIn: 300 * time.Millisecond, give: 5 * time.Second, wantHits: 1},
		{name: "refuses the signature", status: http.StatusForbidden, give: 5 * time.Second, wantErr: "403 Forbidden", wantHits: 1},
		{name: "never listens", startIn: -1, give: 500 * time.Millisecond, wantErr: "connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			var hits atomic.Int32
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				if tc.status != 0 {
					http.Error(w, "bad signature", tc.status)
					return
				}
				c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
				if err == nil {
					c.Close()
				}
			})
			if tc.startIn >= 0 {
				srv := &http.Server{Handler: handler}
				t.Cleanup(func() { srv.Close() })
				started := make(chan error, 1)
				go func() {
					time.Sleep(tc.startIn)
					l, err := net.Listen("tcp", addr)
					started <- err
					if err == nil {
						_ = srv.Serve(l)
					}
				}()
				t.Cleanup(func() {
					if err := <-started; err != nil {
						t.Errorf("launcher listen on %s: %v", addr, err)
					}
				})
			}
			ctx, cancel := context.WithTimeout(context.Background(), tc.give)
			defer cancel()
			ws, err := launch.DialLauncher(ctx, addr, []byte("key"), []byte(`{"argv":["true"]}`))
			if ws != nil {
				ws.Close()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("dial: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("dial: %v, want an error saying %q", err, tc.wantErr)
			}
			if got := hits.Load(); got != tc.wantHits {
				t.Errorf("the launcher was asked %d times, want %d", got, tc.wantHits)
			}
		})
	}
}

// freeAddr is a loopback address nothing listens on (a moment ago something
// did, so it is free to take).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
