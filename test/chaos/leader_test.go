package chaos

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/test/e2e"
)

// TestLeaderKilledUnderLoad: the leading replica is SIGKILLed mid-burst
// with a standby running. Clients retry their submissions (same
// Idempotency-Key) against the other replica; the standby takes the Lease
// after it expires and binds what is pending. The hand-over time under load
// is reported.
func TestLeaderKilledUnderLoad(t *testing.T) {
	f := begin(t, 2, "")
	var leader *replica
	e2e.WaitFor(t, "a replica leads", time.Minute, func(ctx context.Context) (bool, error) {
		leader = f.site.leader(ctx, t)
		return leader != nil, fmt.Errorf("no leader yet")
	})
	at := time.Now()
	p := leader.process()
	if err := syscall.Kill(-p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	t.Logf("killed the leader %s (pid %d)", leader.name, p.PID())
	f.end("leader SIGKILLed (standby up)", at, 0)
}
