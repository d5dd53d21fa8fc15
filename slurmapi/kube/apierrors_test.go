package kube

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestTranslateAPIError(t *testing.T) {
	pgs := schema.GroupResource{Group: "scheduling.sluice.dev", Resource: "podgroups"}
	forbidden := apierrors.NewForbidden(pgs, "job-7", errors.New(`User "system:serviceaccount:sluice-system:sluice" cannot create resource "podgroups" in API group "scheduling.sluice.dev" in the namespace "slurm-nlp"`))
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	cases := []struct {
		name       string
		err        error
		status     int
		retryAfter time.Duration
		mentions   string
	}{
		{"unavailable", apierrors.NewServiceUnavailable("etcd is down"), http.StatusServiceUnavailable, unavailableRetry, "Kubernetes API is unavailable"},
		{"server timeout, wrapped", fmt.Errorf("create PodGroup: %w", apierrors.NewServerTimeout(pgs, "create", 3)), http.StatusServiceUnavailable, 3 * time.Second, "Kubernetes API is unavailable"},
		{"timeout", apierrors.NewTimeoutError("request timed out", 0), http.StatusServiceUnavailable, unavailableRetry, "Kubernetes API is unavailable"},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 7), http.StatusServiceUnavailable, 7 * time.Second, "Kubernetes API is unavailable"},
		{"connection refused", fmt.Errorf("list Partitions: %w", refused), http.StatusServiceUnavailable, unavailableRetry, "Kubernetes API is unavailable"},
		{"forbidden names verb and resource", forbidden, http.StatusBadGateway, 0, "allow it to create podgroups.scheduling.sluice.dev in namespace slurm-nlp"},
		{"conflict left after the retry", apierrors.NewConflict(pgs, "job-7", errors.New("changed")), http.StatusConflict, 0, "try again"},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "PodGroup"}, "job-7", field.ErrorList{field.Invalid(field.NewPath("spec"), 1, "bad")}), http.StatusBadRequest, 0, "refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := translateAPIError(c.err)
			if e == nil {
				t.Fatalf("%v not translated", c.err)
			}
			if e.Status != c.status || e.RetryAfter != c.retryAfter || !strings.Contains(e.Description, c.mentions) {
				t.Errorf("got status %d, Retry-After %v, %q; want %d, %v, mentioning %q", e.Status, e.RetryAfter, e.Description, c.status, c.retryAfter, c.mentions)
			}
		})
	}
	if e := translateAPIError(errors.New("a bug")); e != nil {
		t.Errorf("a non-API error was translated: %v", e)
	}
}
