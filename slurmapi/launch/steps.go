package launch

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluicehq/sluice/accounting"
)

// Files of the pod's run directory.
const (
	stepCounterFile = "next-step"
	stepLogFile     = "steps.jsonl"
)

// nextStepID hands out the job's step ids 0, 1, ... on this node, under
// a file lock so concurrent sruns never share one.
func nextStepID(job *Job) (int, error) {
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

// recordStep appends a finished step to the node's step log, which the
// batch host reports when the job ends.
func recordStep(job *Job, s accounting.Step) error {
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

// recordedSteps reads the node's step log.
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
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s accounting.Step
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return out, fmt.Errorf("step log line %q: %w", sc.Text(), err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// reportSteps leaves the batch step (nil for an allocation, which has
// none) and the srun steps as the container's termination message.
func reportSteps(job *Job, batch *accounting.Step) error {
	steps, err := recordedSteps(job)
	var all []accounting.Step
	if batch != nil {
		all = append(all, *batch)
	}
	all = append(all, steps...)
	if werr := os.WriteFile(job.TermLog, []byte(accounting.EncodeSteps(all)), 0o644); werr != nil {
		return fmt.Errorf("write the step report: %w", werr)
	}
	return err
}
