package realnodes

import (
	"strings"
	"testing"
	"time"
)

// TestScancelReachesTheScript: scancel of a running job deletes its pods; the kubelet
// stops the container, the launcher passes SIGTERM on to the script, whose trap runs
// before it is killed, and the job ends CANCELLED in squeue and sacct.
func TestScancelReachesTheScript(t *testing.T) {
	s := startSite(t)
	id := s.sbatch(t, `#!/bin/bash
#SBATCH -J cancel-me -o cancel-%j.txt
trap 'echo "got SIGTERM"; exit 143' TERM
echo started
sleep 600 &
wait
`)
	s.waitRunning(t, id, 3*time.Minute)
	waitFile(t, s, "cancel-"+id+".txt", "started")
	s.sluice(t, "scancel", id)
	if st := s.waitEnd(t, id, 2*time.Minute); st != "CANCELLED" {
		t.Fatalf("job %s ended %s, want CANCELLED", id, st)
	}
	waitFile(t, s, "cancel-"+id+".txt", "got SIGTERM")
	if got := s.sluice(t, "sacct", "-n", "-X", "-P", "-j", id, "-o", "State"); !strings.HasPrefix(strings.TrimSpace(got), "CANCELLED") {
		t.Errorf("sacct -j %s: %q, want CANCELLED", id, got)
	}
}

// TestTimeLimitSignalsThenKills: at a job's time limit the script gets SIGTERM, and a
// script that ignores it is killed after the grace; the job ends TIMEOUT.
func TestTimeLimitSignalsThenKills(t *testing.T) {
	s := startSite(t)
	id := s.sbatch(t, `#!/bin/bash
#SBATCH -J limited -t 1 -o limit-%j.txt
trap 'echo "got SIGTERM, carrying on"' TERM
echo started
for i in $(seq 1 600); do sleep 1; done
echo "not killed"
`)
	if st := s.waitEnd(t, id, 4*time.Minute); st != "TIMEOUT" {
		t.Fatalf("job %s ended %s, want TIMEOUT:\n%s", id, st, s.tryRead("limit-"+id+".txt"))
	}
	out := s.readShared(t, "limit-"+id+".txt")
	if !strings.Contains(out, "got SIGTERM, carrying on") || strings.Contains(out, "not killed") {
		t.Errorf("the script should have been sent SIGTERM at the limit, then killed:\n%s", out)
	}
}

// waitFile waits until the shared file name holds want.
func waitFile(t *testing.T, s *site, name, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(s.tryRead(name), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %q: %s", name, want, s.tryRead(name))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
