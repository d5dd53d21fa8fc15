package webhook

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// The end-to-end test shares one small rig; with -short only the unit tests
// run and no rig starts. The owner tests' controller-runtime clients have
// nothing to log; without a logger controller-runtime reports that with a
// stack trace.
func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(e2e.Main(m, cluster.Spec{NodePools: []cluster.NodePool{{
		Name: "h100", Count: 1, GPUsPerNode: 8, GPUModel: "H100-80GB", GPUMemoryMiB: 81920, CPU: "128", Memory: "1Ti",
	}}}))
}
