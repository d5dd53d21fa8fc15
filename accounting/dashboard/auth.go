package dashboard

import (
	"context"
	"errors"
	"net/http"

	"github.com/sluicehq/sluice/accounting"
)

// Viewer is an authenticated caller, as the REST API's auth decides it:
// slurmapi.Identity satisfies it, so the dashboard keeps no second token check.
type Viewer interface {
	// CanSeeJob reports whether the caller may see a job of owner charged to
	// account (every job, unless the site keeps jobs private: then their own, a
	// coordinator's accounts', everything for operators).
	CanSeeJob(owner, account string) bool
	// IsOperator reports whether the caller sees every job.
	IsOperator() bool
	// CanSeeUsage reports whether the caller may see the usage charged to
	// user in account, user "" being the account's own row (everything,
	// unless the site keeps usage private: then their own, a coordinator's
	// accounts', everything for operators).
	CanSeeUsage(user, account string) bool
}

// Authenticator reads the caller from a request's token headers
// (X-SLURM-USER-TOKEN or Authorization: Bearer); an error refuses the request
// with 401 and the error's text.
type Authenticator func(r *http.Request) (Viewer, error)

// errRestAuthFail is Slurm's ESLURM_REST_AUTH_FAIL.
const errRestAuthFail = 9008

type viewerKey struct{}

// authenticated answers 401 to a request the authenticator refuses and hands
// the caller to h through the request's context otherwise.
func (d *Dashboard) authenticated(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := d.cfg.Authenticate(r)
		if err == nil && v == nil {
			err = errors.New("the authenticator returned no caller")
		}
		if err != nil {
			writeErrors(w, http.StatusUnauthorized, errRestAuthFail, "authentication", err.Error())
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, v)))
	})
}

// viewerOf is the caller authenticated holds in ctx.
func viewerOf(ctx context.Context) Viewer {
	v, _ := ctx.Value(viewerKey{}).(Viewer)
	return v
}

// visibleJobs keeps the jobs v may see, in order.
func visibleJobs(v Viewer, jobs []accounting.Job) []accounting.Job {
	if v.IsOperator() {
		return jobs
	}
	out := jobs[:0]
	for _, j := range jobs {
		if v.CanSeeJob(j.User, j.Account) {
			out = append(out, j)
		}
	}
	return out
}
