package sluiceproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	// listenTimeout bounds the wait for the "serving" log line: the server
	// first reaches the API server, which on a loaded rig takes seconds.
	listenTimeout = time.Minute
	// stopGrace is what a server gets after SIGTERM before its group is
	// killed: enough for a graceful shutdown (Lease release, ledger flush).
	stopGrace = 15 * time.Second
	// failureLogLines is how much of the log a failed test prints: enough to
	// see why the server failed, not the whole run.
	failureLogLines = 100
)

// Process is one `sluice server` run as a child of the test.
type Process struct {
	name   string
	cmd    *exec.Cmd
	log    *logBuffer
	exited chan struct{} // closed once the process has been reaped
	addr   string        // host:port of its REST API and /metrics
}

// Start runs `sluice server --config FILE` (the binary Main built) with
// config written as FILE in YAML, and returns once the server listens. It
// fails the test, with the end of the log, if the server exits first or does
// not listen within a minute. When the test ends the server is stopped
// (Stop), and its log's last lines are printed if the test failed. name
// tells servers apart in messages.
func Start(t testing.TB, name string, config map[string]any) *Process {
	t.Helper()
	p := Launch(t, name, config)
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s (pid %d) log, last lines:\n%s", name, p.PID(), p.Tail(failureLogLines))
		}
	})
	return p
}

// Launch is Start without the stop at the end of t: for a server several
// tests share, which its owner stops (Stop) once they have all run, for
// example from e2e.BeforeRigStop. t only reports a failed start.
func Launch(t testing.TB, name string, config map[string]any) *Process {
	t.Helper()
	bin := Binary(t)
	data, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	p := &Process{name: name, log: &logBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, "server", "--config", cfgPath)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group, so a signal to the group reaches anything
		// it spawned, and never the test itself.
		Setpgid: true,
		// Killed by the kernel if `go test` dies (a timeout panic, SIGKILL)
		// before the cleanup below runs, instead of serving on forever.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	listening := false
	defer func() {
		if !listening { // t.Fatalf below: nobody else would stop it
			p.Stop()
		}
	}()
	p.waitListening(t)
	listening = true
	return p
}

// waitListening polls the log for the "serving" line until the deadline.
func (p *Process) waitListening(t testing.TB) {
	t.Helper()
	for deadline := time.Now().Add(listenTimeout); ; time.Sleep(50 * time.Millisecond) {
		if p.gone() {
			t.Fatalf("%s exited before listening (%v):\n%s", p.name, p.cmd.ProcessState, p.Tail(failureLogLines))
		}
		if p.addr = p.log.servingAddr(); p.addr != "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening after %s:\n%s", p.name, listenTimeout, p.Tail(failureLogLines))
		}
	}
}

// Name is the name given to Start.
func (p *Process) Name() string { return p.name }

// Addr is the host:port the server's REST API, probes and /metrics listen on.
func (p *Process) Addr() string { return p.addr }

// PID is the server's process id (the server's Lease identity embeds it).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the process has ended and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Log is everything the server has written to stdout and stderr so far.
func (p *Process) Log() string { return p.log.String() }

// Tail is the log's last n lines.
func (p *Process) Tail(n int) string { return p.log.tail(n) }

func (p *Process) gone() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Kill ends the server at once with SIGKILL to its group, as a crashed node
// or an OOM kill would: no Lease release, no graceful shutdown. It returns
// once the process has been reaped.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	if p.gone() {
		t.Fatalf("kill %s: it had already exited", p.name)
	}
	if err := syscall.Kill(-p.PID(), syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", p.name, err)
	}
	<-p.exited
}

// Terminate sends SIGTERM to the group, as a rolling update does, waits for
// the exit and returns its code: -1 when the server had to be killed after
// 15 s.
func (p *Process) Terminate(t testing.TB) int {
	t.Helper()
	if p.gone() {
		t.Fatalf("terminate %s: it had already exited", p.name)
	}
	if err := syscall.Kill(-p.PID(), syscall.SIGTERM); err != nil {
		t.Fatalf("terminate %s: %v", p.name, err)
	}
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(stopGrace):
		p.Stop()
		return -1
	}
}

// Stop asks the server to shut down (SIGTERM to its group), then kills the
// group after 15 s. A process already reaped is left alone: its PID, and so
// its group id, may belong to another process by now.
func (p *Process) Stop() {
	if p.gone() {
		return
	}
	_ = syscall.Kill(-p.PID(), syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.exited
	}
}
