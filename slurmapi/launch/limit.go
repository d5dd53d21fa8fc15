package launch

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// The time limit and --signal, as slurmctld and slurmstepd give them:
// the kubelet ends every pod of the job at its limit (the pods'
// activeDeadlineSeconds: SIGTERM, then SIGKILL after the grace period,
// Slurm's KillWait), and each node's launcher passes the SIGTERM to the
// tasks on its node, once, and waits for them; the job ends TIMEOUT (the
// pod's DeadlineExceeded). Before the limit the launchers send the
// warning signal (--signal) to every step's tasks, or to the batch
// shell only (B:).

// terminatingFile, in a node's run directory, says its launcher is
// passing a SIGTERM to the node's tasks itself: srun then signals only
// its own node's tasks, so that no task gets the signal twice.
const terminatingFile = "terminating"

// jobEnd is when the job's time limit ends (zero: no limit), from the
// pod's environment; a pod without EnvJobStart counts from started.
func jobEnd(getenv func(string) string, started time.Time) time.Time {
	limit, err := strconv.ParseInt(getenv(EnvTimeLimit), 10, 64)
	if err != nil || limit <= 0 {
		return time.Time{}
	}
	if s, err := strconv.ParseInt(getenv(EnvJobStart), 10, 64); err == nil && s > 0 {
		started = time.Unix(s, 0)
	}
	return started.Add(time.Duration(limit) * time.Second)
}

// jobEndFile, in a node's run directory, holds the job's end (Unix
// seconds) as its launcher computed it, for srun --signal.
const jobEndFile = "job-end"

// noteJobEnd computes the job's end and leaves it for srun.
func noteJobEnd(job *Job, getenv func(string) string, started time.Time) time.Time {
	end := jobEnd(getenv, started)
	if !end.IsZero() {
		_ = os.WriteFile(filepath.Join(job.RunDir, jobEndFile), []byte(strconv.FormatInt(end.Unix(), 10)), 0o600)
	}
	return end
}

// readJobEnd is the end noteJobEnd left; zero if the job has no limit.
func readJobEnd(job *Job) time.Time {
	b, err := os.ReadFile(filepath.Join(job.RunDir, jobEndFile))
	if err != nil {
		return time.Time{}
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || secs <= 0 {
		return time.Time{}
	}
	return time.Unix(secs, 0)
}

// jobSignal is the job's --signal from the pod's environment.
func jobSignal(getenv func(string) string) (sbatch.Signal, bool) {
	v := getenv(EnvSignal)
	if v == "" {
		return sbatch.Signal{}, false
	}
	s, err := sbatch.ParseSignal(v)
	return s, err == nil
}

// limiter is a launcher's part in the time limit and the warning.
type limiter struct {
	job    *Job
	srv    *server // nil: a one-node batch job serves nothing
	stderr io.Writer

	mu    sync.Mutex
	batch int // the batch shell's pid while it runs, else 0
}

// batchStarted and batchEnded bracket the batch shell's life.
func (l *limiter) batchStarted(pid int) { l.mu.Lock(); l.batch = pid; l.mu.Unlock() }
func (l *limiter) batchEnded()          { l.mu.Lock(); l.batch = 0; l.mu.Unlock() }

// warnAt starts the warning's timer when the job has a limit (it ends
// at end) and a --signal; stop ends it.
func (l *limiter) warnAt(getenv func(string) string, end time.Time) (stop func()) {
	sig, ok := jobSignal(getenv)
	if end.IsZero() || !ok {
		return func() {}
	}
	return afterUntil(end.Add(-time.Duration(sig.Before)*time.Second), func() { l.warn(sig) })
}

// afterUntil runs f at t (at once if t has passed); stop cancels it.
func afterUntil(t time.Time, f func()) (stop func()) {
	timer := time.AfterFunc(time.Until(t), f)
	return func() { timer.Stop() }
}

// warn sends the warning signal: with B: to the batch shell alone (on
// the batch host), else to every step running from this node (its srun
// passes it to the step's tasks on every node; an attached command
// gets it itself), never to the batch shell, as Slurm does.
func (l *limiter) warn(sig sbatch.Signal) {
	s := syscall.Signal(sig.Num)
	if sig.Batch {
		l.mu.Lock()
		pid := l.batch
		l.mu.Unlock()
		if pid > 0 {
			_ = syscall.Kill(pid, s)
		}
		return
	}
	pids, _ := filepath.Glob(filepath.Join(l.job.RunDir, "step-*.pid"))
	for _, f := range pids {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			_ = syscall.Kill(pid, s)
		}
	}
	if l.srv != nil {
		l.srv.signalAttachedTasks(s)
	}
}

// terminate passes the kubelet's SIGTERM (the time limit, scancel, a
// drain) to this node's tasks: the batch shell's process group, the
// tasks other nodes' sruns started here and attached commands. srun,
// told by the terminating file, signals only its own node's tasks.
func (l *limiter) terminate(s syscall.Signal) {
	if s == syscall.SIGTERM {
		if err := os.WriteFile(filepath.Join(l.job.RunDir, terminatingFile), nil, 0o600); err != nil {
			fmt.Fprintf(l.stderr, "sluice launch: %v\n", err)
		}
	}
	l.srv.killAll(s)
	l.mu.Lock()
	pid := l.batch
	l.mu.Unlock()
	if pid > 0 {
		_ = syscall.Kill(-pid, s)
	}
}

// terminating reports whether this node's launcher is passing a SIGTERM
// on itself (srun's question).
func terminating(job *Job) bool {
	_, err := os.Stat(filepath.Join(job.RunDir, terminatingFile))
	return err == nil
}

// waitIdle returns once no task another node's srun started here and no
// attached command runs, or done is closed or another signal comes (the
// kubelet's SIGKILL needs no waiting for).
func (s *server) waitIdle(done <-chan struct{}, sigs <-chan os.Signal) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		idle := len(s.steps) == 0 && len(s.attached) == 0
		s.mu.Unlock()
		if idle {
			return
		}
		select {
		case <-done:
			return
		case <-sigs:
			return
		case <-tick.C:
		}
	}
}

// waitSteps returns once no srun runs on this node (its pid file gone or
// its process ended) and the server is idle, or another signal comes:
// the batch host, terminated, stays up while its tasks use their grace.
func waitSteps(job *Job, srv *server, sigs <-chan os.Signal) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if !srunsRunning(job) {
			break
		}
		select {
		case <-sigs:
			return
		case <-tick.C:
		}
	}
	if srv != nil {
		srv.waitIdle(nil, sigs)
	}
}

// srunsRunning reports whether an srun of this node still runs.
func srunsRunning(job *Job) bool {
	pids, _ := filepath.Glob(filepath.Join(job.RunDir, "step-*.pid"))
	for _, f := range pids {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 && syscall.Kill(pid, 0) == nil {
			return true
		}
	}
	return false
}
