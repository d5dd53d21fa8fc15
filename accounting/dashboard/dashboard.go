// Package dashboard is Sluice's accounting web UI: a page at /ui/ with charts drawn as
// inline SVG by a small embedded script (no CDN: it works offline), and the JSON API
// under /ui/api/ it reads, which the sacct, sshare and sreport commands use too. The API
// takes the REST API's tokens (Config.Authenticate); the page asks for one. Every
// number comes from accounting/report over the ledger, so the page, the CLI and sreport
// agree.
package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

//go:embed assets
var assets embed.FS

// Prefix is where the dashboard is mounted.
const Prefix = "/ui/"

// Config configures the dashboard.
type Config struct {
	Store accounting.Store
	// Usage is how decayed usage is computed for the fair-share tree.
	Usage accounting.UsageConfig
	// Assocs returns the fair-share tree (accounts with parents and shares, users);
	// nil means the accounts and users that have usage, one share each.
	Assocs func(ctx context.Context) ([]accounting.ShareAssoc, error)
	// Cluster is the name reports print; "" means "sluice".
	Cluster string
	// Clock is nil for time.Now.
	Clock func() time.Time
	// Authenticate checks every /ui/api/ request's token, as the REST API
	// does; required. The page's static files need none: the page asks for a
	// token and sends it with its API calls.
	Authenticate Authenticator
}

// Dashboard serves the page and its API under Prefix.
type Dashboard struct {
	cfg    Config
	mux    *http.ServeMux
	static http.Handler
}

// New builds the handler; mount it at Prefix (it expects full paths starting with /ui/).
func New(cfg Config) (*Dashboard, error) {
	if cfg.Store == nil {
		return nil, errors.New("dashboard: no ledger store")
	}
	if cfg.Authenticate == nil {
		return nil, errors.New("dashboard: no authenticator: the API serves every user's jobs and must check tokens")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Cluster == "" {
		cfg.Cluster = "sluice"
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	d := &Dashboard{cfg: cfg, mux: http.NewServeMux(), static: http.StripPrefix(strings.TrimSuffix(Prefix, "/"), http.FileServerFS(sub))}
	for path, h := range map[string]func(*http.Request) (any, error){
		"overview":    d.overview,
		"gpu-hours":   d.gpuHours,
		"fairshare":   d.fairShare,
		"top-users":   d.topUsers,
		"jobs":        d.jobs,
		"sreport":     d.sreport,
		"node-health": d.nodeHealth,
	} {
		d.mux.Handle("GET "+Prefix+"api/"+path, d.authenticated(apiHandler(h)))
	}
	d.mux.Handle(Prefix+"api/", d.authenticated(apiHandler(func(r *http.Request) (any, error) {
		return nil, &apiError{status: http.StatusNotFound, source: "path", msg: "no such dashboard endpoint: " + r.URL.Path}
	})))
	d.mux.Handle(Prefix, d.static)
	return d, nil
}

// ServeHTTP implements http.Handler.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.mux.ServeHTTP(w, r) }

// apiError is a refused request: a 4xx with Slurm's errors[] entry.
type apiError struct {
	status int
	source string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// errRestInvalidQuery is Slurm's ESLURM_REST_INVALID_QUERY, the errors[] number of a
// query parameter the server cannot use.
const errRestInvalidQuery = 9000

func apiHandler(h func(*http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := h(r)
		if err != nil {
			status, source := http.StatusInternalServerError, "ledger"
			var ae *apiError
			if errors.As(err, &ae) {
				status, source = ae.status, ae.source
			}
			writeErrors(w, status, errRestInvalidQuery, source, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}

// writeErrors answers with one Slurm-style errors[] entry.
func writeErrors(w http.ResponseWriter, status, number int, source, msg string) {
	writeJSON(w, status, map[string]any{"errors": []map[string]any{{"error_number": number, "error": msg,
		"description": msg, "source": source}}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away: nothing to do
}
