package slurmapi

// route: GET /sluice/v1/job/{job_id}/log -> (*Server).JobLogHandler, mounted
// by the binary next to the API (JobLogPath): it is Sluice's own endpoint,
// in no data_parser document, so it is not in routes.go.

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"
)

// JobLogPath is where `sluice logs` reads a job's output: researchers hold
// a token, not a kubeconfig, so the server reads the pod log for them.
// Query: follow=true streams until the job ends; stream=stdout|stderr
// picks one stream (default both, as sbatch writes them to one file);
// node=N reads the task on the job's Nth node (default 0, the batch host).
const JobLogPath = "/sluice/v1/job/{job_id}/log"

// LogStream is which of a job's output streams to read.
type LogStream string

// The streams: both interleaved (as --output without --error), or one.
const (
	LogAll    LogStream = ""
	LogStdout LogStream = "stdout"
	LogStderr LogStream = "stderr"
)

// LogOptions say which output of a job to read.
type LogOptions struct {
	Follow bool
	Stream LogStream
	Node   int // SLURM_NODEID of the task
}

// LogSource reads a job's output. It returns *Error for what the caller
// can act on (the job has not started, no such node); other errors are
// faults of the cluster. slurmapi/kube implements it on pod logs.
type LogSource interface {
	JobLog(ctx context.Context, job *Job, opts LogOptions) (io.ReadCloser, error)
}

// JobLogHandler serves JobLogPath from src: the caller authenticates as
// for every endpoint and sees only jobs they may access (their own, their
// accounts' as coordinator, all as operator). The log is text/plain;
// failures are errors[] entries as elsewhere.
func (s *Server) JobLogHandler(src LogSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id, err := s.cfg.Auth.Authenticate(r, start)
		if err == nil {
			err = s.serveJobLog(w, r, id, src)
		}
		if err != nil {
			plainError(w, err)
		}
		s.stats.record("GET sluice/job/{job_id}/log", id.User, time.Since(start))
	})
}

// serveJobLog copies the log to w, flushing as it arrives so that follow
// streams. Once the first byte is written a failure can only end the body.
func (s *Server) serveJobLog(w http.ResponseWriter, r *http.Request, id Identity, src LogSource) *Error {
	if s.backend == nil {
		return Errorf(http.StatusServiceUnavailable, ErrNotSupported, "sluice", "this server runs without a cluster backend")
	}
	opts, e := parseLogOptions(r)
	if e != nil {
		return e
	}
	job, _, err := accessibleJob(s, &call{ctx: r.Context(), r: r, id: id, vars: mux.Vars(r)})
	if err != nil {
		return s.asError(err)
	}
	body, err := src.JobLog(r.Context(), &job, opts)
	if err != nil {
		return s.asError(err)
	}
	defer body.Close()
	if opts.Follow {
		// A followed log lasts as long as the job: the server's write
		// timeout, meant for answers, must not cut it.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the client went away
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return nil // io.EOF, or the stream broke after the header went out
		}
	}
}

// parseLogOptions reads follow, stream and node from the query.
func parseLogOptions(r *http.Request) (LogOptions, *Error) {
	q := r.URL.Query()
	var o LogOptions
	if v := q.Get("follow"); v != "" {
		f, err := strconv.ParseBool(v)
		if err != nil {
			return o, BadRequest(ErrRestInvalidQuery, "follow", "follow must be true or false, got %q", v)
		}
		o.Follow = f
	}
	switch v := LogStream(q.Get("stream")); v {
	case LogAll, LogStdout, LogStderr:
		o.Stream = v
	default:
		return o, BadRequest(ErrRestInvalidQuery, "stream", "stream must be stdout or stderr (or absent for both), got %q", v)
	}
	if v := q.Get("node"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return o, BadRequest(ErrRestInvalidQuery, "node", "node must be a node index (0 for the batch host), got %q", v)
		}
		o.Node = n
	}
	return o, nil
}
