// Package tenancy is the hostile-tenant suite: every attack a tenant could
// try against Sluice's trust boundary (docs/security.md), run against a real
// `sluice server` on the rig, asserting the refusal and that nothing else
// changed.
//
// All tests share one server (harness_test.go), started by the first test
// that asks for it and stopped after the last, seeded with examples/site.yaml
// as `sluice dev` seeds it: alice in account nlp, bob in vision, an operator
// and an admin. A test file adds its attacks with:
//
//	s := siteFor(t)                                   // the shared server (skips with -short)
//	r := s.submit(t, alice, map[string]any{"qos": "high"})  // POST job/submit as alice
//	r.requireRefused(t, http.StatusBadRequest, slurmapi.ErrInvalidQOS)
//	id := s.submitOK(t, alice, nil)                   // a job alice owns, cancelled at the end
//	s.get(t, bob, "/slurm/v0.0.45/job/"+id)           // GET, DELETE, POST as any user:
//	s.do(t, bob, http.MethodDelete, path, body, hdr)  //   the request and its parsed answer
//
// s.token(t, user) mints a token for any user name, s.kube and s.crs reach
// the rig's API server with admin rights (a test builds namespace-scoped
// clients from s.restConfig for Kubernetes tenants). Tests must leave the
// site as they found it: what they create they delete (t.Cleanup), and
// jobs they submit through submitOK are cancelled when they end.
package tenancy

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // the test's own controller-runtime clients have nothing to log
	os.Exit(sluiceproc.Main(func() int { return e2e.Main(m, cluster.DefaultSpec()) }))
}
