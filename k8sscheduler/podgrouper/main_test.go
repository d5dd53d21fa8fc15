package podgrouper_test

import (
	"os"
	"testing"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestMain starts one local rig for the package's tests against a real API
// server; with -short none is started and those tests skip. The client's
// own log lines go to klog rather than being held back, which
// controller-runtime would otherwise report with a stack trace.
func TestMain(m *testing.M) {
	ctrllog.SetLogger(klog.NewKlogr())
	os.Exit(e2e.Main(m, cluster.DefaultSpec()))
}
