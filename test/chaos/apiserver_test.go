package chaos

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/test/e2e"
)

// TestAPIServerKilledAndRestarted: kube-apiserver is SIGKILLed mid-burst and
// kept down for the outage; submissions meanwhile answer 503 and are
// retried, pod creates fail and are retried. After the restart nothing
// acknowledged is lost and nothing runs twice.
func TestAPIServerKilledAndRestarted(t *testing.T) {
	f := begin(t, 1, "")
	rig := e2e.Rig(t)
	at := time.Now()
	if err := rig.KillAPIServer(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(f.sc.outage)
	if err := rig.StartAPIServer(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.end("kube-apiserver killed", at, time.Since(at))
}
