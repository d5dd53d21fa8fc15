package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// Paths of the launcher's HTTP API.
const (
	pathLaunch     = "/v1/launch"
	pathSignal     = "/v1/signal"
	pathShutdown   = "/v1/shutdown"
	pathStepID     = "/v1/step-id"
	pathStepRecord = "/v1/step-record"
	pathStdin      = "/v1/stdin"
	pathSteps      = "/v1/steps"
)

// signalRequest asks a node to signal a step's tasks.
type signalRequest struct {
	Step   int `json:"step"`
	Signal int `json:"signal"`
	// Whole: the whole step, through the srun that runs it on this node
	// (scancel JOB.STEP, sent to the batch host); else only the tasks a
	// remote srun started here.
	Whole bool `json:"whole,omitempty"`
	// Nonce keeps the same signal sent twice in one second from being
	// refused as a replay.
	Nonce string `json:"nonce,omitempty"`
}

// server runs steps on this node for srun on other nodes.
type server struct {
	job    *Job
	verify *verifier
	getenv func(string) string

	mu       sync.Mutex
	steps    map[int]*nodeStep
	stdins   map[int]*os.File // a step's task 0 input, fed by pathStdin
	attached map[*attachedCmd]bool
	done     chan struct{} // closed by a shutdown request
	once     sync.Once
	released chan int // an allocation's end and status (attach.go)
	holds    holds    // the connections holding an allocation (hold.go)
}

// serve listens on the job's launcher address until ctx ends or the batch
// host asks it to shut down (then done is closed).
func serve(ctx context.Context, job *Job, getenv func(string) string) (s *server, stop func(), err error) {
	key, err := job.key()
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", job.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("launcher: %w", err)
	}
	s = &server{job: job, verify: newVerifier(key), getenv: getenv, steps: map[int]*nodeStep{}, stdins: map[int]*os.File{},
		attached: map[*attachedCmd]bool{}, done: make(chan struct{}), released: make(chan int, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathLaunch, s.launch)
	mux.HandleFunc("POST "+pathSignal, s.signal)
	mux.HandleFunc("POST "+pathShutdown, s.shutdown)
	mux.HandleFunc("POST "+pathStepID, s.stepID)
	mux.HandleFunc("POST "+pathStepRecord, s.stepRecord)
	mux.HandleFunc("POST "+pathStdin, s.stdin)
	mux.HandleFunc("POST "+pathSteps, s.listSteps)
	mux.HandleFunc("POST "+pathPMIFence, s.pmiFence)
	mux.HandleFunc("GET "+pathAttach, s.attach)
	srv := &http.Server{Handler: mux, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { _ = srv.Serve(ln) }()
	stop = func() {
		s.killAll(syscall.SIGKILL)
		// Answers in flight (the shutdown request's) are finished first.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
	}
	return s, stop, nil
}

// body reads and authenticates a request's body.
func (s *server) body(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err == nil {
		err = s.verify.verify(r, b)
	}
	if err != nil {
		http.Error(w, "launcher: "+err.Error(), http.StatusUnauthorized)
		return nil, false
	}
	return b, true
}

func (s *server) launch(w http.ResponseWriter, r *http.Request) {
	b, ok := s.body(w, r)
	if !ok {
		return
	}
	var spec StepSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		http.Error(w, "launcher: bad step: "+err.Error(), http.StatusBadRequest)
		return
	}
	if spec.JobID != s.job.ID {
		http.Error(w, fmt.Sprintf("launcher: step is for job %s, this is job %s", spec.JobID, s.job.ID), http.StatusBadRequest)
		return
	}
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	emit := func(e event) {
		mu.Lock()
		defer mu.Unlock()
		if enc.Encode(e) == nil && flusher != nil {
			flusher.Flush()
		}
	}
	s.mu.Lock()
	if _, dup := s.steps[spec.Step]; dup {
		s.mu.Unlock()
		http.Error(w, fmt.Sprintf("launcher: step %d already runs here", spec.Step), http.StatusConflict)
		return
	}
	s.steps[spec.Step] = nil // reserved while starting
	s.mu.Unlock()
	var in *os.File
	if spec.Stdin {
		// Made before the answer starts: srun sends input once it has it.
		var err error
		if in, err = s.stdinPipe(spec.Step); err != nil {
			s.forget(spec.Step)
			http.Error(w, "launcher: "+err.Error(), http.StatusInternalServerError)
			return
		}
		defer s.closeStdin(spec.Step)
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush() // srun sends task 0's input once it has the answer
	}
	var stdin io.Reader
	if in != nil {
		stdin = in
	}
	st, err := startNodeStep(s.job, spec, s.getenv, emit, stdin)
	if in != nil {
		in.Close() // task 0 has its own copy
	}
	if err != nil {
		emit(event{Task: -1, Err: err.Error()})
		s.forget(spec.Step)
		return
	}
	s.mu.Lock()
	s.steps[spec.Step] = st
	s.mu.Unlock()
	finished := make(chan struct{})
	go func() { st.wait(); close(finished) }()
	select {
	case <-finished:
	case <-r.Context().Done():
		// srun is gone: nobody would see the tasks' output or end. But
		// while the pods are being deleted the tasks keep their grace
		// (srun's pod may simply have ended first).
		if !terminating(s.job) {
			st.signal(syscall.SIGKILL)
		}
		<-finished
	}
	s.forget(spec.Step)
}

func (s *server) forget(step int) {
	s.mu.Lock()
	delete(s.steps, step)
	s.mu.Unlock()
}

func (s *server) signal(w http.ResponseWriter, r *http.Request) {
	b, ok := s.body(w, r)
	if !ok {
		return
	}
	var req signalRequest
	if err := json.Unmarshal(b, &req); err != nil || req.Signal <= 0 || req.Signal > 64 {
		http.Error(w, "launcher: bad signal request", http.StatusBadRequest)
		return
	}
	if req.Whole {
		if !s.signalLocalStep(req.Step, syscall.Signal(req.Signal)) {
			http.Error(w, fmt.Sprintf("launcher: step %s.%d is not running", s.job.ID, req.Step), http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	s.mu.Lock()
	st := s.steps[req.Step]
	s.mu.Unlock()
	st.signal(syscall.Signal(req.Signal))
	w.WriteHeader(http.StatusNoContent)
}

// stepID hands another node's srun the job's next step id (the batch
// host allocates them all: steps.go).
func (s *server) stepID(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.body(w, r); !ok {
		return
	}
	if s.job.Node != 0 {
		http.Error(w, "launcher: step ids come from the batch host (node 0)", http.StatusMisdirectedRequest)
		return
	}
	id, err := allocStepID(s.job)
	if err != nil {
		http.Error(w, "launcher: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(stepIDAnswer{Step: id})
}

// stepRecord keeps another node's srun's step in the batch host's step
// log (steps.go).
func (s *server) stepRecord(w http.ResponseWriter, r *http.Request) {
	b, ok := s.body(w, r)
	if !ok {
		return
	}
	var st accounting.Step
	if err := json.Unmarshal(b, &st); err != nil || st.JobID != s.jobID() {
		http.Error(w, fmt.Sprintf("launcher: not a step of job %s", s.job.ID), http.StatusBadRequest)
		return
	}
	if err := st.Validate(); err != nil {
		http.Error(w, "launcher: "+err.Error(), http.StatusBadRequest)
		return
	}
	if s.job.Node != 0 {
		http.Error(w, "launcher: steps are kept by the batch host (node 0)", http.StatusMisdirectedRequest)
		return
	}
	if err := appendStep(s.job, st); err != nil {
		http.Error(w, "launcher: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) jobID() int64 {
	id, _ := strconv.ParseInt(s.job.ID, 10, 64)
	return id
}

func (s *server) shutdown(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.body(w, r); !ok {
		return
	}
	s.killAll(syscall.SIGKILL)
	w.WriteHeader(http.StatusNoContent)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	s.once.Do(func() { close(s.done) })
}

func (s *server) killAll(sig syscall.Signal) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.steps {
		st.signal(sig)
	}
	for a := range s.attached {
		a.signal(sig)
	}
}

// signalAttachedTasks signals the attached commands that are tasks of
// their own (srun --pty, a plain command), not an attached srun, which
// gets a step-wide signal through its pid file.
func (s *server) signalAttachedTasks(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for a := range s.attached {
		if a.step != nil {
			a.signal(sig)
		}
	}
}
