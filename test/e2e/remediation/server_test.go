package remediation

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// servingRE finds the REST address in the server's "serving" log line.
var servingRE = regexp.MustCompile(`msg=serving addr=(\S+)`)

// runServer runs `sluice server` with cfg as its configuration file until the test ends
// (SIGTERM, then SIGKILL to its process group) and returns the address it serves on. Its
// log is printed when the test fails.
func runServer(t *testing.T, bin, dir string, cfg map[string]any) string {
	t.Helper()
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	cmd := exec.Command(bin, "server", "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own group, so the kill reaches anything it spawned; killed by the kernel if
	// `go test` dies before the cleanup runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("sluice server (pid %d) log, last lines:\n%s", cmd.Process.Pid, log.tail(100))
		}
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("sluice server exited before listening:\n%s", log.tail(100))
		default:
		}
		if m := servingRE.FindStringSubmatch(log.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("sluice server not listening after a minute:\n%s", log.tail(100))
		}
	}
}

// syncBuffer collects the server's output, written by exec's copying goroutine and
// read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail is the last n lines, enough to see why the server failed.
func (b *syncBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
