package podgrouper_test

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestMain starts one local rig for the package's tests against a real API
// server; with -short none is started and those tests skip.
func TestMain(m *testing.M) { os.Exit(e2e.Main(m, cluster.DefaultSpec())) }
