// Package jobmodel is the end-to-end property test of the one job model (issue 14): a
// seeded random mix of Slurm jobs and manifest workloads (bare pods, gang Jobs) runs
// through success, failure, OOM, cancel, requeue and eviction on a real `sluice server`, and every
// view of each job (REST job/{id}, the read model over the cluster's objects, the ledger
// through the accounting API) must agree.
package jobmodel

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
	ctrllog.SetLogger(logr.Discard())
	os.Exit(sluiceproc.Main(func() int { return e2e.Main(m, cluster.DefaultSpec()) }))
}
