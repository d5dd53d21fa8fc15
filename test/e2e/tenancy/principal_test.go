package tenancy

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/test/e2e"
)

// A REST user named like a namespace is not that namespace's workloads: a bare pod in
// namespace N is the job of principal "ns:N", which squeue and sacct show, and a token
// for user N can neither read, cancel nor read the log of it. A token for "ns:N" itself
// is refused, even one signed with the server's key, and an administrator cannot act
// as it.
func TestRESTUserNamedLikeANamespaceDoesNotOwnItsWorkloads(t *testing.T) {
	s := siteFor(t)
	tenant, ns := kubeTenant(t, s)
	ctx := context.Background()
	pod, err := tenant.CoreV1().Pods(ns).Create(ctx, sluicePod("lone", map[string]string{v1alpha1.QueueLabel: "vision"}, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := pod.Labels[v1alpha1.JobIDLabel]
	if id == "" {
		t.Fatalf("the bare pod got no job id: labels %v", pod.Labels)
	}
	var principal string
	e2e.WaitFor(t, "squeue lists the bare pod's job", time.Minute, func(context.Context) (bool, error) {
		j := s.job(t, id)
		principal, _ = j["user_name"].(string)
		return principal != "", nil
	})
	if want := "ns:" + ns; principal != want {
		t.Fatalf("job %s (bare pod in %s) shows user %q, want %q", id, ns, principal, want)
	}
	if acct := s.waitAccounted(t, id); acct["user"] != "ns:"+ns {
		t.Errorf("sacct shows job %s as user %v, want ns:%s", id, acct["user"], ns)
	}
	for _, tc := range []struct{ name, method, path string }{
		{"read the job", http.MethodGet, api + "/job/" + id},
		{"cancel the job", http.MethodDelete, api + "/job/" + id},
		{"read the job's log", http.MethodGet, strings.Replace(slurmapi.JobLogPath, "{job_id}", id, 1)},
		{"query slurmdb for the job", http.MethodGet, "/slurmdb/v0.0.45/job/" + id},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.do(t, ns, tc.method, tc.path, nil, nil).requireRefused(t, http.StatusForbidden, slurmapi.ErrAccessDenied)
		})
	}
	if _, err := slurmapi.MintToken(s.key, "ns:"+ns, time.Hour); err == nil {
		t.Errorf("a token was minted for the namespace's principal ns:%s", ns)
	}
	r := s.raw(t, http.MethodGet, api+"/job/"+id, nil, map[string]string{"X-SLURM-USER-TOKEN": s.token(t, adminUser), "X-SLURM-USER-NAME": "ns:" + ns})
	r.requireRefused(t, http.StatusUnauthorized, slurmapi.ErrRestAuthFail)
	if _, err := s.kube.CoreV1().Pods(ns).Get(ctx, "lone", metav1.GetOptions{}); err != nil {
		t.Errorf("the pod after the tries: %v, want it still there", err)
	}
}
