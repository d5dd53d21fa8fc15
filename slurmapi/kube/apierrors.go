package kube

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sluicehq/sluice/slurmapi"
)

// unavailableRetry is the Retry-After sent when the Kubernetes API is
// unavailable and did not suggest a delay itself.
const unavailableRetry = 2 * time.Second

// TranslateError words a Kubernetes API failure as the REST answer a
// client can act on (slurmapi.ErrorTranslator): an unreachable, overloaded
// or timed-out API server is 503 with Retry-After, since the same request
// may succeed shortly; the server's own RBAC refusing a call is 502, since
// the client did nothing wrong (not 4xx), retrying will not help (not 503),
// and the fault is in the upstream the server depends on; a conflict left
// after the internal retry is 409. Other errors are not recognised (nil).
func (b *Backend) TranslateError(err error) *slurmapi.Error { return translateAPIError(err) }

func translateAPIError(err error) *slurmapi.Error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsServiceUnavailable(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err), unreachable(err):
		e := slurmapi.Errorf(http.StatusServiceUnavailable, slurmapi.ErrControllerDown, "kubernetes",
			"the Kubernetes API is unavailable, nothing was changed; try again shortly (%v)", err)
		e.RetryAfter = unavailableRetry
		if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
			e.RetryAfter = time.Duration(s) * time.Second
		}
		return e
	case apierrors.IsForbidden(err):
		return slurmapi.Errorf(http.StatusBadGateway, slurmapi.ErrAccessDenied, "kubernetes-rbac",
			"the sluice server's Kubernetes RBAC does not allow it to %s; an administrator must grant this to the server's service account (see the chart's ClusterRole): %v",
			forbiddenAction(err), err)
	case apierrors.IsConflict(err):
		return slurmapi.Errorf(http.StatusConflict, slurmapi.ErrRestBadRequest, "kubernetes",
			"the job changed while it was being updated, twice; try again (%v)", err)
	case apierrors.IsInvalid(err):
		return slurmapi.BadRequest(slurmapi.ErrRestInvalidJobs, "kubernetes", "the cluster refused the change: %v", err)
	}
	return nil
}

// unreachable reports a connection that failed or timed out before the API
// server answered at all.
func unreachable(err error) bool {
	var op *net.OpError
	var ne net.Error
	return errors.As(err, &op) || (errors.As(err, &ne) && ne.Timeout())
}

// forbiddenMessage is how the API server's authorizer words a refusal.
var forbiddenMessage = regexp.MustCompile(`cannot (\S+) resource "([^"]*)"(?: in API group "([^"]*)")?(?: in the namespace "([^"]*)")?`)

// forbiddenAction names the verb and resource the RBAC lacks, e.g. "create
// podgroups.scheduling.sluice.dev in namespace slurm-nlp".
func forbiddenAction(err error) string {
	if m := forbiddenMessage.FindStringSubmatch(err.Error()); m != nil {
		s := m[1] + " " + m[2]
		if m[3] != "" {
			s += "." + m[3]
		}
		if m[4] != "" {
			s += " in namespace " + m[4]
		}
		return s
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Details != nil {
		d := st.Status().Details
		return fmt.Sprintf("access %s.%s %q", d.Kind, d.Group, d.Name)
	}
	return "make this call"
}
