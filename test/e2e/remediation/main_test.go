// Package remediation is the end-to-end suite of GPU remediation with Slurm jobs: a real
// `sluice server` (scheduler, Slurm REST API and job lifecycle, accounting ledger,
// remediation controller, wired as in production) runs against the rig, with one agent
// per node reading that node's fault-injection file. It checks that a node fault
// quarantines and drains the node and requeues the Slurm job on healthy nodes, that the
// node comes back only through a validation pod, that a GPU-local fault evicts only that
// GPU's pods, and that the circuit breaker holds at its threshold.
package remediation

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
