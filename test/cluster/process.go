package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// stopGrace is how long a component gets to exit after SIGTERM before the
// rig kills its whole process group.
const stopGrace = 10 * time.Second

// logTailLines is how much of a failing component's log an error carries.
const logTailLines = 25

// component is one control-plane binary the rig runs, in its own process group
// so that stopping it also stops anything it spawned.
type component struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	env     []string      // the environment added to the test's, for a restart
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // set before done is closed
}

// startComponent runs bin with args, output appended to logDir/name.log.
func startComponent(name, bin string, args, env []string, logDir string) (*component, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If the process that started the rig dies without calling Stop
		// (a panic, SIGKILL, Ctrl-C on `go test`), the kernel kills the
		// component instead of leaving it running.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &component{name: name, cmd: cmd, logPath: logPath, env: env, done: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	return c, nil
}

func (c *component) pid() int { return c.cmd.Process.Pid }

// exited reports whether the process has ended, and how.
func (c *component) exited() (bool, error) {
	select {
	case <-c.done:
		if c.waitErr == nil {
			return true, errors.New("exited")
		}
		return true, c.waitErr
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs the
// group. The group is killed even after a clean exit, in case a child stayed.
func (c *component) stop(grace time.Duration) {
	pgid := c.pid() // Setpgid makes the group id the leader's pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-c.done
	// SIGKILL is delivered when each member next runs: on a loaded machine a child
	// can still show as sleeping for a moment after its leader was reaped. Stop
	// returns once the group is gone, so nothing outlives the rig's Stop.
	for deadline := time.Now().Add(killWait); groupAlive(pgid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// killWait bounds how long stop waits for a SIGKILLed group's members to die.
const killWait = 5 * time.Second

// failure wraps err with the tail of the component's log, the first place
// anyone looks when a component does not come up.
func (c *component) failure(err error) error {
	return fmt.Errorf("%s: %w\n--- last lines of %s ---\n%s", c.name, err, c.logPath, tailFile(c.logPath, logTailLines))
}

// tailFile returns the last n lines of a file, or a note why it cannot.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const maxRead = 64 << 10
	if info, err := f.Stat(); err == nil && info.Size() > maxRead {
		if _, err := f.Seek(-maxRead, io.SeekEnd); err != nil {
			return fmt.Sprintf("(cannot read log: %v)", err)
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(string(bytes.TrimRight(data, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
