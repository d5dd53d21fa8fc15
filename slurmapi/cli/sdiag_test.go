package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
)

// TestSdiagLayout: sdiag's sections and lines as Slurm's sdiag prints them.
func TestSdiagLayout(t *testing.T) {
	sdiagZone = time.UTC
	t.Cleanup(func() { sdiagZone = time.Local })
	d := client.Diag{
		ReqTime: client.Set(1_773_144_000), ReqTimeStart: client.Set(1_773_140_400), ServerThreadCount: 1,
		JobsSubmitted: 12, JobsStarted: 9, JobsCompleted: 6, JobsCanceled: 1, JobsFailed: 2, JobsPending: 3, JobsRunning: 1,
		CycleLast: 812, CycleMax: 4120, CycleTotal: 3600, CycleMean: 905,
		RPCsByType: []client.RPCs{{TypeID: 1, MessageType: "REQUEST_SUBMIT_BATCH_JOB", Count: 12, AverageTime: client.Set(2100), TotalTime: 25200}},
		RPCsByUser: []client.RPCs{{UserID: 1, User: "alice", Count: 12, AverageTime: client.Set(2100), TotalTime: 25200}},
	}
	var b strings.Builder
	writeSdiag(&b, d)
	checkGolden(t, "sdiag.golden", b.String())
}
