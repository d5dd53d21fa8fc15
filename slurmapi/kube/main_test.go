package kube

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/launch/launchtest"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestMain starts one local rig for the tests that talk to a real API
// server; with -short none is started and those tests skip.
// A pod run as a local process starts this binary as sluice or srun
// (launchtest.Start); Dispatch runs that command instead of the tests.
func TestMain(m *testing.M) {
	launchtest.Dispatch()
	os.Exit(e2e.Main(m, cluster.DefaultSpec()))
}
