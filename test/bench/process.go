package bench

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// childProcess is a contender the harness runs as a process of its own, so that its CPU
// and peak RSS are read alone; its output goes to a log file beside the rig's.
type childProcess struct {
	env    []string // added to this process's environment
	cmd    *exec.Cmd
	exited chan struct{}
}

// start runs bin with args and returns how to read its usage since its start.
func (c *childProcess) start(logPath, bin string, args ...string) (usageProbe, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if len(c.env) > 0 {
		c.cmd.Env = append(os.Environ(), c.env...)
	}
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	c.exited = make(chan struct{})
	go func() {
		_ = c.cmd.Wait()
		logf.Close()
		close(c.exited)
	}()
	return processUsage(c.cmd.Process.Pid), nil
}

// stop ends the process: SIGTERM, then SIGKILL after 10 s.
func (c *childProcess) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}
