package launch_test

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/launch/launchtest"
)

// A job pod run as a local process starts this binary as sluice or srun.
func TestMain(m *testing.M) {
	launchtest.Dispatch()
	os.Exit(m.Run())
}
