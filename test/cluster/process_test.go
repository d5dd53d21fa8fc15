package cluster

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A component's children share its process group, so stopping it stops them,
// even when the leader ignores SIGTERM.
func TestComponentStopKillsProcessGroup(t *testing.T) {
	tests := []struct {
		name   string
		script string
	}{
		{name: "exits on SIGTERM", script: "sleep 300 & echo $! > child; wait"},
		{name: "ignores SIGTERM", script: "trap '' TERM; sleep 300 & echo $! > child; while :; do sleep 0.05; done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			comp, err := startComponent("sh", "/bin/sh", []string{"-c", "cd " + dir + " || exit 1; " + tt.script}, nil, dir)
			if err != nil {
				t.Fatal(err)
			}
			child := waitForPIDFile(t, filepath.Join(dir, "child"))
			comp.stop(500 * time.Millisecond)
			if groupAlive(comp.pid()) {
				t.Errorf("process group %d still alive after stop", comp.pid())
			}
			if data, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat"); err == nil && !strings.Contains(string(data), ") Z ") {
				t.Errorf("child %d still running after stop", child)
			}
			if done, _ := comp.exited(); !done {
				t.Error("exited() = false after stop")
			}
			comp.stop(time.Millisecond) // a second stop must not block or panic
		})
	}
}

func TestComponentFailureQuotesLog(t *testing.T) {
	dir := t.TempDir()
	comp, err := startComponent("broken", "/bin/sh", []string{"-c", "for i in $(seq 1 40); do echo line $i; done; echo 'fatal: bad flag' >&2; exit 3"}, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	<-comp.done
	done, exitErr := comp.exited()
	if !done || exitErr == nil || !strings.Contains(exitErr.Error(), "exit status 3") {
		t.Fatalf("exited() = %v, %v; want true, exit status 3", done, exitErr)
	}
	msg := comp.failure(exitErr).Error()
	for _, want := range []string{"broken: exit status 3", "fatal: bad flag", "line 40", filepath.Join(dir, "broken.log")} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "line 10\n") {
		t.Errorf("failure message should quote only the last %d lines:\n%s", logTailLines, msg)
	}
}

func TestStartComponentMissingBinary(t *testing.T) {
	_, err := startComponent("ghost", filepath.Join(t.TempDir(), "nope"), nil, nil, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "start ghost") {
		t.Fatalf("err = %v, want a start ghost error", err)
	}
}

func TestFreePortsAreDistinctAndFree(t *testing.T) {
	ports, err := freePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d returned twice", p)
		}
		seen[p] = true
		if portInUse(p) {
			t.Errorf("port %d is in use after freePorts returned", p)
		}
	}
}

func waitForPIDFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(data), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err == nil {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never written", path)
	return 0
}
