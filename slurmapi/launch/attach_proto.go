package launch

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// An attach is a command of a running job whose terminal is somewhere
// else: `sluice srun --pty bash` and `sluice srun` inside `sluice salloc`
// on a user's machine. The user's client talks to the Sluice server with
// the user's token; the server checks that the job is the user's and
// relays the websocket, message by message, to the launcher of the job's
// batch host, signing the handshake with the job's key. The launcher runs
// the command (under a pty, or srun with pipes) and sends its output and
// exit status back the same way.
const pathAttach = "/v1/attach"

// AttachHeader carries the AttachRequest, base64 JSON, on the websocket
// handshake: to the Sluice server (authenticated by the user's token) and
// from it to the launcher (covered by the job key's signature).
const AttachHeader = "X-Sluice-Attach"

// MaxAttachRequest bounds an AttachRequest's JSON.
const MaxAttachRequest = 64 << 10

// AttachRequest is what an attach runs.
type AttachRequest struct {
	// Argv is the command; with Srun, srun's options and command.
	Argv []string `json:"argv,omitempty"`
	// Srun runs `srun Argv...` on the batch host: a step across the
	// allocation, its tasks' output in the stdout and stderr frames.
	// Without it Argv runs as one task on the batch host.
	Srun bool `json:"srun,omitempty"`
	// Pty runs the task under a pseudo-terminal of Rows x Cols, TERM=Term.
	Pty  bool   `json:"pty,omitempty"`
	Term string `json:"term,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
	// EndJob ends the allocation with the command's status when it ends
	// (srun --pty from a user's shell allocated the job for this command).
	EndJob bool `json:"end_job,omitempty"`
	// Release, without a command, ends the allocation now with this
	// status (salloc's shell exited).
	Release *int `json:"release,omitempty"`
	// Hold, without a command, keeps the allocation while the connection
	// lasts (salloc's): once no hold is left and none comes back within
	// the launcher's inactive limit, the allocation is released, so a
	// salloc killed or cut off does not leave its job RUNNING (hold.go).
	Hold bool `json:"hold,omitempty"`
	// Nonce makes each request's signature its own: the launcher accepts a
	// signature once, and two identical attaches in the same second (two
	// holds, `srun hostname` twice) would otherwise sign alike.
	Nonce string `json:"nonce,omitempty"`
}

// Check refuses a request the launcher could not run.
func (r *AttachRequest) Check() error {
	switch {
	case r.Release != nil && len(r.Argv) > 0:
		return fmt.Errorf("an attach either releases the allocation or runs a command, not both")
	case r.Hold && (r.Release != nil || len(r.Argv) > 0):
		return fmt.Errorf("an attach that holds the allocation neither releases it nor runs a command")
	case r.Release == nil && len(r.Argv) == 0 && !r.Hold:
		return fmt.Errorf("no command to run")
	case r.Release != nil && (*r.Release < 0 || *r.Release > 255):
		return fmt.Errorf("exit status %d is not in 0-255", *r.Release)
	case r.Pty && r.Srun:
		return fmt.Errorf("--pty runs one task on the batch host, not srun")
	}
	return nil
}

// EncodeAttach is the header value of r.
func EncodeAttach(r AttachRequest) (string, error) {
	if r.Nonce == "" {
		var n [8]byte
		_, _ = rand.Read(n[:])
		r.Nonce = hex.EncodeToString(n[:])
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	if len(b) > MaxAttachRequest {
		return "", fmt.Errorf("the command is too long (%d bytes of request, at most %d)", len(b), MaxAttachRequest)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// DecodeAttach reads and checks the request of header value v; raw is
// its JSON (what the launcher's signature covers).
func DecodeAttach(v string) (r AttachRequest, raw []byte, err error) {
	if v == "" {
		return r, nil, fmt.Errorf("no %s header", AttachHeader)
	}
	if len(v) > base64.StdEncoding.EncodedLen(MaxAttachRequest) {
		return r, nil, fmt.Errorf("%s is longer than %d bytes", AttachHeader, MaxAttachRequest)
	}
	raw, err = base64.StdEncoding.DecodeString(v)
	if err != nil {
		return r, nil, fmt.Errorf("%s is not base64: %v", AttachHeader, err)
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, nil, fmt.Errorf("%s: %v", AttachHeader, err)
	}
	return r, raw, r.Check()
}

// Frames of an attach: binary websocket messages whose first byte says
// what the rest is. The server relays them unread.
const (
	FrameStdin  = 'i' // client -> task: input
	FrameEOF    = 'c' // client -> task: input ended
	FrameResize = 'r' // client -> task: {"rows":R,"cols":C}
	FrameSignal = 's' // client -> task: a signal number, decimal
	FrameStdout = 'o' // task -> client
	FrameStderr = 'e' // task -> client
	FrameExit   = 'x' // task -> client: {"code":N,"signal":S}, the last frame
	FrameError  = 'E' // task -> client: why the command could not run
	// FrameKeepalive: holder -> launcher, nothing; a hold that sends none
	// for holdSilence is lost (hold.go).
	FrameKeepalive = 'k'
)

// winSize is a FrameResize's body.
type winSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// frameConn serialises writes to a websocket (one writer at a time).
type frameConn struct {
	mu sync.Mutex
	ws *websocket.Conn
}

func (c *frameConn) send(kind byte, data []byte) error {
	msg := make([]byte, 1+len(data))
	msg[0] = kind
	copy(msg[1:], data)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ws.WriteMessage(websocket.BinaryMessage, msg)
}

// close ends the conversation cleanly: the peer reads a normal closure.
func (c *frameConn) close() {
	c.mu.Lock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(5*time.Second))
	c.mu.Unlock()
	_ = c.ws.Close()
}

// frameWriterTo writes everything as frames of one kind.
type frameWriterTo struct {
	c    *frameConn
	kind byte
}

func (w frameWriterTo) Write(p []byte) (int, error) {
	if err := w.c.send(w.kind, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// DialLauncher opens an attach on the launcher at addr (host:port),
// signing the handshake and the request (its JSON, raw) with the job's
// key. The Sluice server calls it for a user it has authorised.
//
// A pod is Running once its container has started, a moment before its
// launcher listens: `sluice srun --pty` right after `sluice salloc` meets
// that moment. A failed dial is therefore tried again for up to
// launcherStartGrace before the launcher counts as unreachable.
func DialLauncher(ctx context.Context, addr string, key, raw []byte) (*websocket.Conn, error) {
	return whenUp(ctx, launcherStartGrace, func() (*websocket.Conn, error) { return dialLauncherOnce(ctx, addr, key, raw) })
}

// launcherStartGrace is how long DialLauncher waits for a launcher to
// start listening.
const launcherStartGrace = 10 * time.Second

func dialLauncherOnce(ctx context.Context, addr string, key, raw []byte) (*websocket.Conn, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+pathAttach, nil)
	if err != nil {
		return nil, err
	}
	sign(req, key, raw, time.Now())
	req.Header.Set(AttachHeader, base64.StdEncoding.EncodeToString(raw))
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
	ws, resp, err := d.DialContext(ctx, "ws://"+addr+pathAttach, req.Header)
	if err != nil {
		if resp != nil {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			return nil, fmt.Errorf("launcher %s: %s: %s", addr, resp.Status, msg)
		}
		return nil, fmt.Errorf("launcher %s: %w", addr, err)
	}
	return ws, nil
}
