package cli

import (
	"testing"

	"github.com/sluicehq/sluice/slurmapi/client"
)

// sbatch -W exits when the job has ended, with the status a pipeline reads.
func TestJobEndedForSbatchWait(t *testing.T) {
	job := func(states []string, rc, sig int64) client.Job {
		var j client.Job
		j.JobState = states
		j.ExitCode.ReturnCode = client.NoVal{Set: true, Number: rc}
		j.ExitCode.Signal.ID = client.NoVal{Set: sig != 0, Number: sig}
		return j
	}
	tests := []struct {
		name     string
		j        client.Job
		done     bool
		wantCode int
	}{
		{"pending", job([]string{"PENDING"}, 0, 0), false, 0},
		{"running", job([]string{"RUNNING"}, 0, 0), false, 0},
		{"ended, pods still going", job([]string{"COMPLETED", "COMPLETING"}, 0, 0), false, 0},
		{"completed", job([]string{"COMPLETED"}, 0, 0), true, 0},
		{"failed with 3", job([]string{"FAILED"}, 3, 0), true, 3},
		{"killed by SIGKILL", job([]string{"CANCELLED"}, 0, 9), true, 137},
		{"cancelled before it ran", job([]string{"CANCELLED"}, 0, 0), true, 1},
		{"timed out", job([]string{"TIMEOUT"}, 0, 0), true, 1},
	}
	for _, tt := range tests {
		done, rc := jobEnded(tt.j)
		if done != tt.done || rc != tt.wantCode {
			t.Errorf("%s: ended %v exit %d, want %v %d", tt.name, done, rc, tt.done, tt.wantCode)
		}
	}
}
