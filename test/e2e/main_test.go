package e2e

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/launch/launchtest"
	"github.com/sluicehq/sluice/test/cluster"
)

// Every suite in this package shares one rig with the default two-pool spec.
// A job pod run as a local process (launchtest) starts this binary as sluice
// or srun.
func TestMain(m *testing.M) {
	launchtest.Dispatch()
	os.Exit(Main(m, cluster.DefaultSpec()))
}
