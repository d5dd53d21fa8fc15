package launch

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/gorilla/websocket"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

var upgrader = websocket.Upgrader{ReadBufferSize: 32 << 10, WriteBufferSize: 32 << 10}

// attach serves one attach (attach_proto.go) on the batch host.
func (s *server) attach(w http.ResponseWriter, r *http.Request) {
	req, raw, err := DecodeAttach(r.Header.Get(AttachHeader))
	if err != nil {
		http.Error(w, "launcher: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.verify.verify(r, raw); err != nil {
		http.Error(w, "launcher: "+err.Error(), http.StatusUnauthorized)
		return
	}
	if s.job.Node != 0 {
		http.Error(w, "launcher: attaches go to the batch host (node 0)", http.StatusConflict)
		return
	}
	if (req.Release != nil || req.EndJob || req.Hold) && !s.job.Allocation {
		http.Error(w, "launcher: a batch job ends with its script, not from an attach", http.StatusConflict)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	c := &frameConn{ws: ws}
	defer c.close()
	if req.Hold {
		s.hold(c)
		return
	}
	if req.Release != nil {
		b, _ := json.Marshal(taskExit{Code: *req.Release})
		_ = c.send(FrameExit, b) // before the launcher may end
		s.release(*req.Release)
		return
	}
	x, err := s.runAttached(req, c)
	if err != nil {
		_ = c.send(FrameError, []byte(err.Error()))
		x = &taskExit{Code: 1}
	} else {
		b, _ := json.Marshal(x)
		_ = c.send(FrameExit, b)
	}
	if req.EndJob {
		s.release(x.rc())
	}
}

// release ends an allocation with status rc (Main returns it).
func (s *server) release(rc int) {
	select {
	case s.released <- rc:
	default: // already released
	}
}

// attachedCmd is the command of an attach: the task under a pty, or srun
// with pipes.
type attachedCmd struct {
	cmd   *exec.Cmd
	tty   *os.File       // the pty's controlling side; nil without --pty
	stdin io.WriteCloser // srun's input; nil with --pty
	outs  sync.WaitGroup // output copied to the client
	step  *accounting.Step
	ended atomic.Bool // Wait returned: the pid may be reused
}

// runAttached runs req's command, copying frames both ways until it
// exits, and returns its exit.
func (s *server) runAttached(req AttachRequest, c *frameConn) (*taskExit, error) {
	a, err := s.startAttached(req, c)
	if err != nil {
		return nil, err
	}
	s.trackAttached(a, true)
	defer s.trackAttached(a, false)
	go a.readFrames(c)
	_ = a.cmd.Wait() // the status is read from ProcessState
	a.ended.Store(true)
	if a.tty != nil {
		// The pty is read until every holder of the terminal closed it;
		// a background job left holding it does not hold the session.
		waitOrTimeout(&a.outs, 2*time.Second)
		a.tty.Close()
	}
	a.outs.Wait()
	x := exitOf(a.cmd)
	if a.step != nil {
		st := a.step
		st.End, st.ExitCode, st.Signal = time.Now(), x.Code, x.Signal
		st.State = stepState(*x, false)
		if err := recordStep(s.job, *st); err != nil {
			fmt.Fprintf(os.Stderr, "sluice launch: record step %s: %v\n", st.StepID, err)
		}
	}
	return x, nil
}

func waitOrTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// startAttached starts req's command on this node.
// startPiped starts cmd in its own process group with its output framed onto c and its
// stdin a pipe the attach feeds.
func startPiped(cmd *exec.Cmd, c *frameConn) (io.WriteCloser, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = frameWriterTo{c, FrameStdout}, frameWriterTo{c, FrameStderr}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.WaitDelay = 5 * time.Second
	return in, cmd.Start()
}

func (s *server) startAttached(req AttachRequest, c *frameConn) (*attachedCmd, error) {
	job := s.job
	a := &attachedCmd{}
	if req.Srun {
		// srun itself, as the batch script would run it: it lays the
		// step out over the allocation and records it.
		cmd := exec.Command(filepath.Join(job.Dir, "srun"), req.Argv...)
		cmd.Env = batchEnv(job, os.Environ())
		in, err := startPiped(cmd, c)
		if err != nil {
			return nil, fmt.Errorf("start srun: %w", err)
		}
		a.cmd, a.stdin = cmd, in
		return a, nil
	}
	stepID, err := nextStepID(job)
	if err != nil {
		return nil, err
	}
	host := job.Hosts[job.Node]
	env := batchEnv(job, os.Environ())
	if req.Term != "" {
		env = append(env, "TERM="+req.Term)
	}
	spec := StepSpec{JobID: job.ID, Step: stepID, Argv: req.Argv, Env: env, Nodes: []string{host}, NTasks: 1}
	env, err = taskEnv(job, spec, TaskSlot{}, s.getenv)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(req.Argv[0], req.Argv[1:]...)
	cmd.Path = lookPath(req.Argv[0], envValue(env, "PATH"), "")
	cmd.Env = env
	start := time.Now()
	if req.Pty {
		tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: max(req.Rows, 1), Cols: max(req.Cols, 1)})
		if err != nil {
			return nil, fmt.Errorf("slurmstepd: error: execve(): %s: %v", req.Argv[0], unwrapExec(err))
		}
		a.tty = tty
		a.outs.Add(1)
		go func() {
			defer a.outs.Done()
			_, _ = io.Copy(frameWriterTo{c, FrameStdout}, tty)
		}()
	} else {
		in, err := startPiped(cmd, c)
		if err != nil {
			return nil, fmt.Errorf("slurmstepd: error: execve(): %s: %v", req.Argv[0], unwrapExec(err))
		}
		a.stdin = in
	}
	a.cmd = cmd
	jobID, _ := strconv.ParseInt(job.ID, 10, 64)
	a.step = &accounting.Step{JobID: jobID, StepID: strconv.Itoa(stepID), Name: filepath.Base(req.Argv[0]),
		Start: start, Tasks: 1, NodeList: sbatch.HostList([]string{host}),
		TRES: accounting.TRES{CPUs: int64(max(job.CPUs, 1)), Nodes: 1}, State: accounting.StateRunning}
	if err := recordStep(job, *a.step); err != nil {
		fmt.Fprintf(os.Stderr, "sluice launch: record step %d: %v\n", stepID, err)
	}
	return a, nil
}

// readFrames applies the client's frames to the command until the
// client goes; a client gone hangs the terminal up (or, for srun, ends
// the step as SIGTERM to srun does).
func (a *attachedCmd) readFrames(c *frameConn) {
	for {
		_, msg, err := c.ws.ReadMessage()
		if err != nil {
			if a.tty != nil {
				a.signal(syscall.SIGHUP)
			} else {
				a.signal(syscall.SIGTERM)
			}
			return
		}
		if len(msg) == 0 {
			continue
		}
		body := msg[1:]
		switch msg[0] {
		case FrameStdin:
			if a.tty != nil {
				_, _ = a.tty.Write(body)
			} else {
				_, _ = a.stdin.Write(body)
			}
		case FrameEOF:
			if a.stdin != nil {
				a.stdin.Close()
			}
		case FrameResize:
			var ws winSize
			if a.tty != nil && json.Unmarshal(body, &ws) == nil && ws.Rows > 0 && ws.Cols > 0 {
				_ = pty.Setsize(a.tty, &pty.Winsize{Rows: ws.Rows, Cols: ws.Cols})
			}
		case FrameSignal:
			if n, err := strconv.Atoi(string(body)); err == nil && n > 0 && n < 65 {
				a.signal(syscall.Signal(n))
			}
		}
	}
}

// signal sends sig to the command: a task's process group (under a pty,
// its session), or srun itself, which passes it to every task.
func (a *attachedCmd) signal(sig syscall.Signal) {
	p := a.cmd.Process
	if p == nil || a.ended.Load() {
		return
	}
	if a.step == nil {
		_ = p.Signal(sig)
		return
	}
	_ = syscall.Kill(-p.Pid, sig)
}

// trackAttached keeps the running attaches, so the launcher's end kills
// them with the job's steps.
func (s *server) trackAttached(a *attachedCmd, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.attached[a] = true
	} else {
		delete(s.attached, a)
	}
}
