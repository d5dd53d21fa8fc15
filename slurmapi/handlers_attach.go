package slurmapi

// route: GET /sluice/v1/job/{job_id}/attach -> (*Server).JobAttachHandler,
// mounted by the binary next to the API, as JobLogPath: Sluice's own
// endpoint, in no data_parser document.

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/gorilla/websocket"
)

// JobAttachPath is where `sluice srun --pty` and `sluice srun` inside
// `sluice salloc` reach a running job's batch host: a websocket the
// server relays to the job's launcher. The command travels in the
// X-Sluice-Attach header (slurmapi/launch.AttachRequest); researchers
// hold a token, not a kubeconfig.
const JobAttachPath = "/sluice/v1/job/{job_id}/attach"

// AttachSource opens an attach on a job's batch host: it checks the
// request (the X-Sluice-Attach header's value), finds the job's launcher
// and signs the handshake and the request with the job's key. It returns
// *Error for what the caller can act on (a bad request, the job is not
// running, it serves no attaches). slurmapi/kube implements it.
type AttachSource interface {
	Attach(ctx context.Context, job *Job, request string) (*websocket.Conn, error)
}

var attachUpgrader = websocket.Upgrader{ReadBufferSize: 32 << 10, WriteBufferSize: 32 << 10}

// JobAttachHandler serves JobAttachPath from src. Only the job's owner (or
// an administrator) may attach: the command runs as the job's user, so
// a coordinator's or operator's right to see the job is not enough.
// Failures before the relay starts are errors[] entries as elsewhere.
func (s *Server) JobAttachHandler(src AttachSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id, err := s.cfg.Auth.Authenticate(r, start)
		if err == nil {
			err = s.serveAttach(w, r, id, src)
		}
		if err != nil {
			plainError(w, err)
		}
		s.stats.record("GET sluice/job/{job_id}/attach", id.User, time.Since(start))
	})
}

func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request, id Identity, src AttachSource) *Error {
	if s.backend == nil || src == nil {
		return Errorf(http.StatusServiceUnavailable, ErrNotSupported, "sluice", "this server runs without a cluster backend")
	}
	if !websocket.IsWebSocketUpgrade(r) {
		return BadRequest(ErrRestInvalidQuery, "attach", "an attach is a websocket: use `sluice srun`")
	}
	job, _, err := accessibleJob(s, &call{ctx: r.Context(), r: r, id: id, vars: mux.Vars(r)})
	if err != nil {
		return s.asError(err)
	}
	if job.Desc.User != id.User && !id.CanAdminister() {
		return Forbidden("job_id", "job %d belongs to %s; only its owner may run commands in it", job.ID, job.Desc.User)
	}
	launcher, err := src.Attach(r.Context(), &job, r.Header.Get("X-Sluice-Attach"))
	if err != nil {
		return s.asError(err)
	}
	client, err := attachUpgrader.Upgrade(w, r, nil)
	if err != nil {
		launcher.Close()
		return nil // the upgrader answered
	}
	// The session lasts as long as the command: the server's deadlines,
	// meant for answers, must not cut it (the hijacked connection's are
	// the websocket's own, which sets none).
	_ = client.NetConn().SetDeadline(time.Time{})
	Relay(client, launcher)
	return nil
}

// Relay copies messages between a client's websocket and a launcher's
// until either ends, then closes both: the server reads no frame.
func Relay(client, launcher *websocket.Conn) {
	done := make(chan struct{}, 2)
	pump := func(from, to *websocket.Conn) {
		defer func() { done <- struct{}{} }()
		for {
			kind, msg, err := from.ReadMessage()
			if err != nil {
				code := websocket.CloseNormalClosure
				if ce, ok := err.(*websocket.CloseError); ok {
					code = ce.Code
				}
				_ = to.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(5*time.Second))
				return
			}
			if err := to.WriteMessage(kind, msg); err != nil {
				return
			}
		}
	}
	go pump(client, launcher)
	go pump(launcher, client)
	<-done
	client.Close()
	launcher.Close()
	<-done
}
