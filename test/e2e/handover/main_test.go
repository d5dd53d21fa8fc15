// Package handover runs two real `sluice server` processes against the rig
// and checks that leader election makes them safe: only the Lease holder
// schedules, and killing it hands scheduling to the other replica without a
// pod being bound twice.
package handover

import (
	"flag"
	"os"
	"testing"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// sluice is the binary under test, compiled while the rig starts.
var sluice *sluiceproc.Build

func TestMain(m *testing.M) {
	flag.Parse()
	ctrllog.SetLogger(klog.Background()) // the site client's warnings, on stderr like the rest
	sluice = sluiceproc.StartBuild()
	code := e2e.Main(m, cluster.DefaultSpec())
	sluice.Remove()
	os.Exit(code)
}
