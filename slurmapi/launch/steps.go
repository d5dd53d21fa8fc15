package launch

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// Files of the pod's run directory.
const (
	stepCounterFile = "next-step"
	stepLogFile     = "steps.jsonl"
)

// nextStepID hands out the job's next step id. As slurmctld does, one
// place allocates them for the whole job: the batch host (node 0). srun
// on another node asks the batch host's launcher, so two sruns started
// from tasks on different nodes never share an id.
func nextStepID(job *Job) (int, error) {
	if job.Node == 0 || len(job.Peers) == 0 {
		return allocStepID(job)
	}
	p, err := newPeers(job)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), launchWait)
	defer cancel()
	resp, err := p.postWhenUp(ctx, 0, pathStepID, stepIDRequest{Nonce: nonce()}, launchWait)
	if err != nil {
		return 0, fmt.Errorf("a step id from the batch host: %w", err)
	}
	defer resp.Body.Close()
	var a stepIDAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&a); err != nil {
		return 0, fmt.Errorf("a step id from the batch host: %w", err)
	}
	return a.Step, nil
}

// stepIDRequest asks the batch host for a step id. Its nonce makes each
// request's signature unique: two sruns asking in the same second are not
// a replay.
type stepIDRequest struct {
	Nonce string `json:"nonce"`
}

// nonce is 16 random bytes, hex.
func nonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// stepIDAnswer is the batch host's answer to pathStepID.
type stepIDAnswer struct {
	Step int `json:"step"`
}

// allocStepID hands out the job's step ids 0, 1, ... from the batch
// host's run directory, under a file lock so concurrent sruns (and the
// launcher serving other nodes) never share one.
func allocStepID(job *Job) (int, error) {
	f, err := os.OpenFile(filepath.Join(job.RunDir, stepCounterFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return 0, fmt.Errorf("step counter: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("lock the step counter: %w", err)
	}
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	id := 0
	if s := strings.TrimSpace(string(buf[:n])); s != "" {
		if id, err = strconv.Atoi(s); err != nil {
			return 0, fmt.Errorf("step counter holds %q", s)
		}
	}
	if err := f.Truncate(0); err != nil {
		return 0, err
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(id+1)), 0); err != nil {
		return 0, err
	}
	return id, nil
}

// recordStep notes a step as it starts (RUNNING) and as it ends in the
// job's step log, which the batch host keeps: srun on another node sends
// it there, so the batch host knows every step of the job, wherever its
// srun runs, and reports them all when the job ends.
func recordStep(job *Job, s accounting.Step) error {
	if job.Node == 0 || len(job.Peers) == 0 {
		return appendStep(job, s)
	}
	p, err := newPeers(job)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return p.call(ctx, 0, pathStepRecord, s)
}

// appendStep appends s to this node's step log.
func appendStep(job *Job, s accounting.Step) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(job.RunDir, stepLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("step log: %w", err)
	}
	defer f.Close()
	_, err = f.Write(append(b, '\n'))
	return err
}

// recordedSteps reads the node's step log: each step as last recorded,
// in the order the steps started.
func recordedSteps(job *Job) ([]accounting.Step, error) {
	f, err := os.Open(filepath.Join(job.RunDir, stepLogFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []accounting.Step
	at := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s accounting.Step
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return out, fmt.Errorf("step log line %q: %w", sc.Text(), err)
		}
		if i, ok := at[s.StepID]; ok {
			out[i] = s
			continue
		}
		at[s.StepID] = len(out)
		out = append(out, s)
	}
	return out, sc.Err()
}

// reportSteps leaves the job's steps as the container's termination
// message: the batch step first (an allocation has none), then the srun
// steps in the order they started.
func reportSteps(job *Job) error {
	steps, err := recordedSteps(job)
	all := make([]accounting.Step, 0, len(steps))
	for _, st := range steps {
		// A step still RUNNING in a report ended with the job if the
		// report is the last (its srun was killed before it could record
		// its end: the pod's grace ran out).
		if st.State == accounting.StateRunning {
			st.State, st.End = accounting.StateCancelled, time.Now()
		}
		if st.StepID == accounting.BatchStep {
			all = append([]accounting.Step{st}, all...)
			continue
		}
		all = append(all, st)
	}
	if werr := os.WriteFile(job.TermLog, []byte(accounting.EncodeSteps(all)), 0o644); werr != nil {
		return fmt.Errorf("write the step report: %w", werr)
	}
	return err
}
