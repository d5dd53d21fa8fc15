package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// forwardedSignals are the signals srun passes to every task of its step
// (SIGINT and SIGTERM also mark the step CANCELLED): what Ctrl-C, scancel
// JOB.STEP and scancel --signal send.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGCONT, syscall.SIGALRM}

// stepSignals are the signals srun catches and passes on: the forwarded
// ones and the job's --signal, which the launchers send every step.
func stepSignals(getenv func(string) string) []os.Signal {
	out := slices.Clone(forwardedSignals)
	if s, ok := jobSignal(getenv); ok && !slices.Contains(out, os.Signal(syscall.Signal(s.Num))) &&
		s.Num != int(syscall.SIGKILL) && s.Num != int(syscall.SIGSTOP) {
		out = append(out, syscall.Signal(s.Num))
	}
	return out
}

func stepPidFile(job *Job, step int) string {
	return filepath.Join(job.RunDir, "step-"+strconv.Itoa(step)+".pid")
}

// writeStepPid records srun's pid for its step, so the launcher of this
// node can signal the step; the returned func removes it.
func writeStepPid(job *Job, step int) func() {
	f := stepPidFile(job, step)
	if os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600) != nil {
		return func() {}
	}
	return func() { _ = os.Remove(f) }
}

// signalLocalStep signals step on this node: the srun that runs it here
// (which passes the signal to every task, on every node), an attached
// task, and the tasks a remote srun started here. SIGKILL reaches srun as
// SIGTERM, so that it ends its tasks and records the step CANCELLED
// instead of dying with its report. It reports whether the step runs here.
func (s *server) signalLocalStep(step int, sig syscall.Signal) bool {
	found := false
	if b, err := os.ReadFile(stepPidFile(s.job, step)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			toSrun := sig
			if sig == syscall.SIGKILL {
				toSrun = syscall.SIGTERM
			}
			found = syscall.Kill(pid, toSrun) == nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.steps[step]; ok && st != nil {
		st.signal(sig)
		found = true
	}
	for a := range s.attached {
		if a.step != nil && a.step.StepID == strconv.Itoa(step) {
			a.signal(sig)
			found = true
		}
	}
	return found
}

// SignalStep asks the launcher at addr (a job's batch host) to signal
// one of its steps; the request is signed with the job's key. The Sluice
// server calls it for scancel JOB.STEP. A step not running there is an
// error naming it.
func SignalStep(ctx context.Context, addr string, key []byte, step, sig int) error {
	body, err := json.Marshal(signalRequest{Step: step, Signal: sig, Whole: true, Nonce: nonce()})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+pathSignal, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	sign(req, key, body, time.Now())
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("launcher %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &StepSignalError{Status: resp.StatusCode, Msg: strings.TrimSpace(string(msg))}
	}
	return nil
}

// StepSignalError is a launcher's refusal to signal a step.
type StepSignalError struct {
	Status int
	Msg    string
}

func (e *StepSignalError) Error() string { return e.Msg }
