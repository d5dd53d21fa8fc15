package e2e

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/test/cluster"
)

// Every suite in this package shares one rig with the default two-pool spec.
func TestMain(m *testing.M) { os.Exit(Main(m, cluster.DefaultSpec())) }
