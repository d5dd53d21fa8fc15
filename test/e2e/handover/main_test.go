// Package handover runs two real `sluice server` processes against the rig
// and checks that leader election makes them safe: only the Lease holder
// schedules, and killing it hands scheduling to the other replica without a
// pod being bound twice.
package handover

import (
	"os"
	"testing"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(klog.Background()) // the site client's warnings, on stderr like the rest
	os.Exit(sluiceproc.Main(func() int { return e2e.Main(m, cluster.DefaultSpec()) }))
}
