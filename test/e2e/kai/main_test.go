// Package kai is the migration suite: a cluster that ran KAI Scheduler moves to Sluice
// with its manifests as they are (docs/kai-compatibility.md). KAI's CRDs (Sluice's own
// minimal schemas), KAI Queues and KAI-style workloads are applied unchanged, `sluice
// import kai` writes the Sluice Queues, and a real `sluice server` in KAI mode places
// everything with the quota accounting KAI would show.
package kai

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
