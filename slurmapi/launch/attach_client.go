package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/term"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/client"
)

// Terminal is the user's side of an attach.
type Terminal struct {
	In       *os.File // a terminal is put in raw mode for --pty
	Out, Err io.Writer
}

// Attach runs req in job id through the Sluice server at serverURL with
// the user's token, and returns the command's exit status as srun
// reports it (128+N for signal N). With Pty and a terminal on t.In, the
// terminal is raw for the session and its size follows the window.
// Without Pty, SIGINT and SIGTERM are passed to the command (srun passes
// them to every task).
func Attach(ctx context.Context, serverURL, token string, id uint32, req AttachRequest, t Terminal) (int, error) {
	raw := false
	if req.Pty && t.In != nil && term.IsTerminal(int(t.In.Fd())) {
		if w, h, err := term.GetSize(int(t.In.Fd())); err == nil {
			req.Cols, req.Rows = uint16(w), uint16(h)
		}
		raw = true
	}
	if req.Pty && req.Term == "" {
		req.Term = os.Getenv("TERM")
	}
	c, err := dialAttach(ctx, serverURL, token, id, req)
	if err != nil {
		return 1, err
	}
	defer c.close()
	ws := c.ws
	if raw {
		old, err := term.MakeRaw(int(t.In.Fd()))
		if err != nil {
			return 1, fmt.Errorf("raw terminal: %w", err)
		}
		defer func() { _ = term.Restore(int(t.In.Fd()), old) }()
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for range winch {
				if w, h, err := term.GetSize(int(t.In.Fd())); err == nil {
					b, _ := json.Marshal(winSize{Rows: uint16(h), Cols: uint16(w)})
					_ = c.send(FrameResize, b)
				}
			}
		}()
	}
	if !req.Pty && req.Release == nil {
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(sigs)
		go func() {
			for s := range sigs {
				_ = c.send(FrameSignal, []byte(strconv.Itoa(int(s.(syscall.Signal)))))
			}
		}()
	}
	if t.In != nil {
		go pumpInput(c, t.In, req.Pty)
	}
	return readAttach(ws, t)
}

// dialAttach opens an attach of req on job id through the Sluice server.
func dialAttach(ctx context.Context, serverURL, token string, id uint32, req AttachRequest) (*frameConn, error) {
	hdr, err := EncodeAttach(req)
	if err != nil {
		return nil, err
	}
	u := strings.Replace(strings.TrimRight(serverURL, "/"), "http", "ws", 1) +
		strings.Replace(slurmapi.JobAttachPath, "{job_id}", strconv.FormatUint(uint64(id), 10), 1)
	h := http.Header{}
	h.Set("X-SLURM-USER-TOKEN", token)
	h.Set(AttachHeader, hdr)
	ws, resp, err := websocket.DefaultDialer.DialContext(ctx, u, h)
	if err != nil {
		return nil, attachRefused(id, resp, err)
	}
	return &frameConn{ws: ws}, nil
}

// pumpInput sends the user's input as it comes; its end, without a pty,
// closes the command's stdin.
func pumpInput(c *frameConn, in io.Reader, pty bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := in.Read(buf)
		if n > 0 && c.send(FrameStdin, buf[:n]) != nil {
			return
		}
		if err != nil {
			if !pty {
				_ = c.send(FrameEOF, nil)
			}
			return
		}
	}
}

// readAttach writes the command's output until its exit frame.
func readAttach(ws *websocket.Conn, t Terminal) (int, error) {
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			return 1, fmt.Errorf("the session ended without the command's status: %w", err)
		}
		if len(msg) == 0 {
			continue
		}
		body := msg[1:]
		switch msg[0] {
		case FrameStdout:
			_, _ = t.Out.Write(body)
		case FrameStderr:
			_, _ = t.Err.Write(body)
		case FrameError:
			return 1, errors.New(string(body))
		case FrameExit:
			var x taskExit
			if err := json.Unmarshal(body, &x); err != nil {
				return 1, fmt.Errorf("bad exit frame %q", body)
			}
			return x.rc(), nil
		}
	}
}

// attachRefused is the server's reason for an attach it refused: a
// *client.APIError with its errors[] when it gave them.
func attachRefused(id uint32, resp *http.Response, err error) error {
	if resp == nil {
		return fmt.Errorf("attach to job %d: %w", id, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	apiErr := &client.APIError{Status: resp.StatusCode}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		apiErr.RetryAfter = time.Duration(secs) * time.Second
	}
	if json.Unmarshal(body, apiErr) == nil && len(apiErr.Errors) > 0 {
		return apiErr
	}
	return fmt.Errorf("attach to job %d: %s: %s", id, resp.Status, strings.TrimSpace(string(body)))
}
