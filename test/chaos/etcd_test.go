package chaos

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/test/e2e"
)

// TestEtcdPausedLongerThanTheLease: etcd is stopped (SIGSTOP) for longer
// than the leader Lease lasts, with a standby running. Both replicas lose
// the API server's storage; the leader cannot renew and exits, and is
// restarted. Afterwards one replica leads and nothing is lost or run twice.
func TestEtcdPausedLongerThanTheLease(t *testing.T) {
	f := begin(t, 2, "")
	rig := e2e.Rig(t)
	at := time.Now()
	if err := rig.PauseEtcd(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = rig.ResumeEtcd()
		}
	})
	time.Sleep(f.sc.outage) // longer than leaseDuration
	if err := rig.ResumeEtcd(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	f.end("etcd paused (SIGSTOP)", at, time.Since(at))
}

// TestWatchesExpire: etcd's history is compacted to its head and the API
// server restarted onto it, so its watch cache starts empty and every watch
// Sluice resumes (at a resourceVersion now compacted away) is answered 410
// Gone: its informers must relist, and nothing may be missed or repeated.
func TestWatchesExpire(t *testing.T) {
	f := begin(t, 1, "")
	rig := e2e.Rig(t)
	at := time.Now()
	rev, err := rig.CompactEtcd(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rig.KillAPIServer(); err != nil {
		t.Fatal(err)
	}
	if _, err := rig.CompactEtcd(f.ctx); err != nil { // what was written up to the kill, too
		t.Fatal(err)
	}
	if err := rig.StartAPIServer(f.ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd compacted at revision %d and after; the API server restarted onto it", rev)
	f.end("watches expired (compaction)", at, time.Since(at))
}
