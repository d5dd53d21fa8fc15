package slurmapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/sluicehq/sluice/slurmapi/openapi"
)

// DefaultPort is slurmrestd's customary port.
const DefaultPort = 6820

// Config is the REST server's configuration.
type Config struct {
	Auth AuthConfig
	// ClusterName is reported in meta and slurmdb answers; default "sluice".
	ClusterName string
	// Hostname is reported by ping; default the machine's host name.
	Hostname string
	// MaxBodyBytes bounds request bodies (scripts included); default 1 MiB.
	MaxBodyBytes int64
	Submit       SubmitPolicy
	// SubmitLimits are the per-user submission rate limits; the zero
	// value limits nobody.
	SubmitLimits SubmitLimits
	// SchedulerStats, when set, gives diag's scheduling-cycle figures.
	SchedulerStats func() SchedulerStats
	// Steps, when set, signals single steps (DELETE job/JOB.STEP).
	Steps StepSignaler
	// MaxJobID is the highest id a Slurm job takes (rest.maxJobId), which
	// `scontrol show config` reports as MaxJobId; 0 leaves it out.
	MaxJobID uint32
}

// Server serves the slurmrestd-compatible API for every version.
type Server struct {
	cfg     Config
	backend Backend
	specs   map[string]*openapi.Spec
	router  *mux.Router
	doc     []byte // this server's OpenAPI document
	started time.Time
	stats   *rpcStats
	limiter *submitLimiter
}

// call is one request as a handler sees it.
type call struct {
	ctx      context.Context
	r        *http.Request
	id       Identity
	version  string
	vars     map[string]string
	warnings []string
	now      time.Time
}

type handlerFunc func(s *Server, c *call) (map[string]any, error)

// route is one endpoint, registered under every version whose document
// has it. needsBackend endpoints answer 503 when the server runs without
// a cluster backend.
type route struct {
	plugin, path, method string
	handle               handlerFunc
	needsBackend         bool
}

// NewServer builds the handler for /slurm/, /slurmdb/ and /openapi/v3.
// backend may be nil: then only ping, licenses, diag and the OpenAPI
// document answer, and everything needing the cluster says so with 503.
func NewServer(cfg Config, backend Backend) (*Server, error) {
	if len(cfg.Auth.Key) < minKeyBytes {
		return nil, fmt.Errorf("the JWT key must have at least %d bytes", minKeyBytes)
	}
	if cfg.ClusterName == "" {
		cfg.ClusterName = "sluice"
	}
	if cfg.Submit.ClusterName == "" {
		cfg.Submit.ClusterName = cfg.ClusterName // the jobs' SLURM_CLUSTER_NAME
	}
	if cfg.Hostname == "" {
		cfg.Hostname, _ = os.Hostname()
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Submit.ShardsPerGPU <= 0 {
		cfg.Submit.ShardsPerGPU = 8
	}
	cfg.Auth.verified = newTokenCache()
	s := &Server{cfg: cfg, backend: backend, specs: map[string]*openapi.Spec{}, started: time.Now(), stats: newRPCStats(), limiter: newSubmitLimiter(cfg.SubmitLimits)}
	for _, v := range openapi.Versions {
		spec, err := openapi.Compile(v)
		if err != nil {
			return nil, err
		}
		s.specs[v] = spec
	}
	s.router = mux.NewRouter()
	if err := s.Register(s.router); err != nil {
		return nil, err
	}
	return s, nil
}

// ServeHTTP makes trailing slashes irrelevant, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.Path) > 1 && strings.HasSuffix(r.URL.Path, "/") {
		r.URL.Path = strings.TrimRight(r.URL.Path, "/")
		r.URL.RawPath = ""
	}
	s.router.ServeHTTP(w, r)
}

// Register adds every endpoint to r (paths without trailing slashes; use
// the Server itself as the handler to have them ignored).
func (s *Server) Register(r *mux.Router) error {
	doc, err := s.openAPIDocument()
	if err != nil {
		return err
	}
	s.doc = doc
	r.HandleFunc("/openapi/v3", s.serveOpenAPI).Methods(http.MethodGet)
	r.HandleFunc("/openapi", s.serveOpenAPI).Methods(http.MethodGet)
	for _, v := range openapi.Versions {
		spec := s.specs[v]
		implemented := map[string]bool{}
		for _, rt := range routes {
			implemented[strings.ToLower(rt.method)+" "+rt.plugin+rt.path] = true
		}
		// Unimplemented endpoints first: a literal path such as
		// job/allocate must not be taken for job/{job_id}.
		for opKey, shape := range spec.Responses {
			if implemented[opKey] {
				continue
			}
			method, key, _ := strings.Cut(opKey, " ")
			plugin, path, _ := strings.Cut(key, "/")
			rt := route{plugin: plugin, path: "/" + path, method: strings.ToUpper(method), handle: unimplemented(key)}
			r.Handle("/"+plugin+"/"+v+"/"+path, s.endpoint(rt, spec, shape)).Methods(rt.method)
		}
		for _, rt := range routes {
			if shape := spec.Response(rt.method, rt.plugin+rt.path); shape != nil {
				r.Handle("/"+rt.plugin+"/"+v+rt.path, s.endpoint(rt, spec, shape)).Methods(rt.method)
			}
		}
	}
	r.NotFoundHandler = http.HandlerFunc(s.unknownURL)
	r.MethodNotAllowedHandler = http.HandlerFunc(s.unknownMethod)
	return nil
}

func (s *Server) endpoint(rt route, spec *openapi.Spec, shape *openapi.Shape) http.Handler {
	rpc := rt.method + " " + rt.plugin + rt.path
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		c := &call{ctx: r.Context(), r: r, version: spec.Version, vars: mux.Vars(r), now: start}
		var payload map[string]any
		id, err := s.cfg.Auth.Authenticate(r, start)
		if err == nil {
			c.id = id
			payload, err = s.run(rt, c, w)
		}
		s.write(w, r, spec, shape, c, payload, err)
		s.stats.record(rpc, c.id.User, time.Since(start))
	})
}

// run calls the handler, turning a missing backend into 503 and limiting
// the body size.
func (s *Server) run(rt route, c *call, w http.ResponseWriter) (map[string]any, *Error) {
	if rt.needsBackend && s.backend == nil {
		return nil, Errorf(http.StatusServiceUnavailable, ErrNotSupported, "sluice", "this server runs without a cluster backend")
	}
	if c.r.Body != nil {
		c.r.Body = http.MaxBytesReader(w, c.r.Body, s.cfg.MaxBodyBytes)
	}
	payload, err := rt.handle(s, c)
	if err != nil {
		return nil, s.asError(err)
	}
	return payload, nil
}

// write renders a response in the version's shape: the payload (or, on
// error, the smallest payload the schema requires), meta, errors and
// warnings, converted by the version's response shape.
func (s *Server) write(w http.ResponseWriter, r *http.Request, spec *openapi.Spec, shape *openapi.Shape, c *call, payload map[string]any, e *Error) {
	status := http.StatusOK
	if payload == nil {
		payload, _ = shape.Empty().(map[string]any)
		if payload == nil {
			payload = map[string]any{}
		}
	}
	errs := []any{}
	if e != nil {
		status = e.Status
		errs = append(errs, e.tree())
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
		}
	}
	warnings := make([]any, 0, len(c.warnings))
	for _, wmsg := range c.warnings {
		warnings = append(warnings, map[string]any{"description": wmsg, "source": "sluice"})
	}
	payload["meta"] = s.meta(r, spec, c.id.User, strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")[0])
	payload["errors"] = errs
	payload["warnings"] = warnings
	out, _ := shape.Conform(payload)
	writeJSON(w, status, out)
}

func (e *Error) tree() map[string]any {
	return map[string]any{"error_number": e.Number, "error": e.Short, "description": e.Description, "source": e.Source}
}

func (s *Server) meta(r *http.Request, spec *openapi.Spec, user, plugin string) map[string]any {
	major, rest, _ := strings.Cut(spec.Release, ".")
	minor, micro, _ := strings.Cut(rest, ".")
	pluginType, pluginName := "openapi/slurmctld", "Slurm OpenAPI slurmctld"
	if plugin == "slurmdb" {
		pluginType, pluginName = "openapi/slurmdbd", "Slurm OpenAPI slurmdbd"
	}
	return map[string]any{
		"plugin": map[string]any{
			"type": pluginType, "name": pluginName,
			"data_parser": "data_parser/" + spec.Version, "accounting_storage": "accounting_storage/sluice",
		},
		"client": map[string]any{"source": r.RemoteAddr, "user": user, "group": ""},
		"slurm": map[string]any{
			"version": map[string]any{"major": major, "minor": minor, "micro": micro},
			"release": spec.Release, "cluster": s.cfg.ClusterName,
		},
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, ok := appendTree(make([]byte, 0, 1024), v)
	var err error
	if !ok {
		b, err = json.Marshal(v)
	}
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"errors":[{"error_number":1,"error":"Unspecified error","description":"response could not be encoded","source":"sluice"}]}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// plainError answers requests outside every versioned document (unknown
// URLs and methods) with a bare envelope.
func plainError(w http.ResponseWriter, e *Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	writeJSON(w, e.Status, map[string]any{"errors": []any{e.tree()}, "warnings": []any{}})
}

func (s *Server) unknownURL(w http.ResponseWriter, r *http.Request) {
	plainError(w, Errorf(http.StatusNotFound, ErrRestUnknownURL, r.URL.Path,
		"no endpoint %s; versions v0.0.41 to v0.0.45 are served under /slurm/ and /slurmdb/, see /openapi/v3", r.URL.Path))
}

func (s *Server) unknownMethod(w http.ResponseWriter, r *http.Request) {
	plainError(w, Errorf(http.StatusMethodNotAllowed, ErrRestUnknownMethod, r.URL.Path,
		"%s is not a method of %s", r.Method, r.URL.Path))
}
