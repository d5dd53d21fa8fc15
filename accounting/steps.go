package accounting

import (
	"bufio"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Step is one job step: the batch script (StepID "batch") or one srun
// (StepID "0", "1", ...). sacct lists it as JOBID.STEPID.
type Step struct {
	JobID    int64     `json:"job_id"`
	StepID   string    `json:"step_id"`
	Name     string    `json:"name"` // the command srun ran, "batch" for the script
	State    JobState  `json:"state"`
	ExitCode int       `json:"exit_code"`
	Signal   int       `json:"exit_signal"`
	Start    time.Time `json:"start_time,omitzero"`
	End      time.Time `json:"end_time,omitzero"`
	Tasks    int64     `json:"tasks"`
	NodeList string    `json:"node_list"`
	TRES     TRES      `json:"tres"`
}

// BatchStep is the batch script's step id.
const BatchStep = "batch"

// StepsMessageHeader starts the step report a batch host leaves as its
// container's termination message: the kubelet copies it into the pod's
// status, where the recorder reads it without the pod holding any
// credential. The message is at most StepsMessageLimit bytes (the
// kubelet's limit per container).
const (
	StepsMessageHeader = "sluice-steps v1"
	StepsMessageLimit  = 4096
)

// EncodeSteps writes steps as a termination message: the header, then one
// line per step (id state exit signal start end tasks cpus gpus nodes
// nodelist name), times in Unix seconds. Steps that do not fit are left
// out from the middle (the batch step and the latest steps stay), and a
// "dropped N" line says how many.
func EncodeSteps(steps []Step) string {
	lines := make([]string, len(steps))
	for i, s := range steps {
		name := strings.Map(func(r rune) rune {
			if r <= ' ' {
				return '_'
			}
			return r
		}, s.Name)
		if len(name) > 64 {
			name = name[:64]
		}
		lines[i] = fmt.Sprintf("%s %s %d %d %d %d %d %d %s %d %s %s", s.StepID, s.State, s.ExitCode, s.Signal,
			unix(s.Start), unix(s.End), s.Tasks, s.TRES.CPUs, strconv.FormatFloat(s.TRES.GPUs, 'f', -1, 64),
			s.TRES.Nodes, orDash(s.NodeList), orDash(name))
	}
	for dropped := 0; ; dropped++ {
		keep := lines
		if dropped > 0 {
			// The first line (usually the batch step) and the newest ones stay.
			keep = append([]string{lines[0], "dropped " + strconv.Itoa(dropped)}, lines[1+dropped:]...)
		}
		msg := StepsMessageHeader + "\n" + strings.Join(keep, "\n") + "\n"
		if len(msg) <= StepsMessageLimit || dropped >= len(lines)-1 {
			return msg
		}
	}
}

func unix(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// DecodeSteps reads a termination message EncodeSteps wrote for job id.
// A message that is not a step report gives no steps and no error (the
// container may have written its own); a malformed line is an error.
func DecodeSteps(jobID int64, msg string) ([]Step, error) {
	sc := bufio.NewScanner(strings.NewReader(msg))
	if !sc.Scan() || sc.Text() != StepsMessageHeader {
		return nil, nil
	}
	var out []Step
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "dropped" {
			continue
		}
		if len(f) != 12 {
			return nil, fmt.Errorf("step line %q: want 12 fields", sc.Text())
		}
		var n [7]int64
		for i, idx := range []int{2, 3, 4, 5, 6, 7, 9} {
			v, err := strconv.ParseInt(f[idx], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("step line %q: field %d: %v", sc.Text(), idx+1, err)
			}
			n[i] = v
		}
		// The report is the job's own words: bound every number to what the
		// ledger's columns hold in both databases, so one job's report can
		// never make a write fail.
		if n[0] < 0 || n[0] > 255 || n[1] < 0 || n[1] > 255 {
			return nil, fmt.Errorf("step line %q: exit code and signal must be 0-255", sc.Text())
		}
		for _, c := range []int64{n[4], n[5], n[6]} {
			if c < 0 || c > math.MaxInt32 {
				return nil, fmt.Errorf("step line %q: tasks, cpus and nodes must be 0-%d", sc.Text(), math.MaxInt32)
			}
		}
		gpus, err := strconv.ParseFloat(f[8], 64)
		if err != nil || math.IsNaN(gpus) || gpus < 0 || gpus > math.MaxInt32 {
			return nil, fmt.Errorf("step line %q: gpus must be a number 0-%d", sc.Text(), math.MaxInt32)
		}
		state, err := ParseJobState(f[1])
		if err != nil {
			return nil, fmt.Errorf("step line %q: %v", sc.Text(), err)
		}
		if f[0] != BatchStep {
			if _, err := strconv.ParseUint(f[0], 10, 31); err != nil {
				return nil, fmt.Errorf("step line %q: step id must be %q or a number", sc.Text(), BatchStep)
			}
		}
		s := Step{JobID: jobID, StepID: f[0], State: state, ExitCode: int(n[0]), Signal: int(n[1]),
			Start: fromUnix(n[2]), End: fromUnix(n[3]), Tasks: n[4],
			TRES: TRES{CPUs: n[5], GPUs: gpus, Nodes: n[6]}, NodeList: undash(f[10]), Name: undash(f[11])}
		out = append(out, s)
	}
	return out, nil
}

func fromUnix(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

func undash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// Validate rejects a step the ledger cannot key or account for.
func (s Step) Validate() error {
	if s.JobID <= 0 {
		return fmt.Errorf("step %q: job id %d is not positive", s.StepID, s.JobID)
	}
	if s.StepID != BatchStep {
		if _, err := strconv.ParseUint(s.StepID, 10, 32); err != nil {
			return fmt.Errorf("step %d.%s: the id must be %q or a number", s.JobID, s.StepID, BatchStep)
		}
	}
	if _, err := ParseJobState(string(s.State)); err != nil {
		return fmt.Errorf("step %d.%s: %v", s.JobID, s.StepID, err)
	}
	return nil
}
