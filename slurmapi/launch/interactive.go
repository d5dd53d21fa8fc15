package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/client"
)

// Allocation is a job allocated for a user's shell (salloc, srun from a
// user's shell), once it runs.
type Allocation struct {
	ID  uint32
	Job client.Job
}

// Allocate asks the server for an allocation (job a job_desc_msg without
// a script) and waits until it runs, saying so on log as salloc does.
// While it waits, ctx ending (the user's Ctrl-C) cancels the job; so does
// the job ending before it ran.
func Allocate(ctx context.Context, c *client.Client, job map[string]any, prog string, log io.Writer) (*Allocation, error) {
	id, warnings, err := c.Allocate(ctx, job)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		fmt.Fprintf(log, "%s: warning: %s\n", prog, w)
	}
	said := false
	for {
		j, err := c.Job(ctx, id)
		if err == nil {
			switch j.State() {
			case "RUNNING":
				fmt.Fprintf(log, "%s: job %d has been allocated resources\n", prog, id)
				return &Allocation{ID: id, Job: j}, nil
			case "PENDING", "CONFIGURING":
				if !said {
					fmt.Fprintf(log, "%s: job %d queued and waiting for resources\n", prog, id)
					said = true
				}
			default:
				return nil, fmt.Errorf("job %d ended before it ran: %s %s", id, j.State(), j.StateReason)
			}
		}
		select {
		case <-ctx.Done():
			cancelCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = c.Cancel(cancelCtx, id, "")
			return nil, fmt.Errorf("job %d: %w; the allocation is cancelled", id, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// attachWait is how long an attach waits for a job's batch host to serve
// (a running job's launcher starts after its init container, and its image
// may still be pulling).
const attachWait = 2 * time.Minute

// AttachWhenUp is Attach, retried while the server says the job's launcher
// is on its way (503 with Retry-After: its pod not started yet) or not
// listening yet (502), saying on t.Err what it waits for, as Slurm's srun
// says "step creation temporarily disabled, retrying". Any other refusal
// (a simulated node, a one-node batch job, a job that ended) is returned
// at once.
func AttachWhenUp(ctx context.Context, c *client.Client, id uint32, req AttachRequest, t Terminal) (int, error) {
	deadline := time.Now().Add(attachWait)
	said := ""
	for {
		rc, err := Attach(ctx, c.URL, c.Token, id, req, t)
		var apiErr *client.APIError
		if err == nil || !errors.As(err, &apiErr) || !launcherOnItsWay(apiErr) {
			return rc, err
		}
		if time.Now().After(deadline) {
			return rc, fmt.Errorf("gave up after %s: %w", attachWait, err)
		}
		if msg := apiErr.Error(); msg != said && t.Err != nil {
			fmt.Fprintf(t.Err, "srun: Job %d step creation temporarily disabled, retrying (%s)\n", id, msg)
			said = msg
		}
		select {
		case <-ctx.Done():
			return 1, err
		case <-time.After(max(apiErr.RetryAfter, time.Second)):
		}
	}
}

// launcherOnItsWay tells an attach refused for now from one refused for good.
func launcherOnItsWay(e *client.APIError) bool {
	return e.Status == http.StatusBadGateway || (e.Status == http.StatusServiceUnavailable && e.RetryAfter > 0)
}

// Release ends an allocation with the status of the user's shell.
func Release(ctx context.Context, c *client.Client, id uint32, rc int) error {
	rc = min(max(rc, 0), 255)
	_, err := AttachWhenUp(ctx, c, id, AttachRequest{Release: &rc}, Terminal{In: nil})
	return err
}

// AllocationEnv is what salloc's shell gets, as Slurm's salloc sets it
// (salloc(1), OUTPUT ENVIRONMENT VARIABLES), so `sluice srun` inside runs
// steps in the allocation. What the job's view does not tell (whether -n
// was given, which memory option) is left out rather than guessed.
func AllocationEnv(a *Allocation, c *client.Client) []string {
	j := a.Job
	env := []string{"SLURM_JOB_ID=" + strconv.FormatUint(uint64(a.ID), 10), "SLURM_JOBID=" + strconv.FormatUint(uint64(a.ID), 10),
		"SLURM_JOB_NAME=" + j.Name, "SLURM_JOB_PARTITION=" + j.Partition, "SLURM_JOB_ACCOUNT=" + j.Account,
		"SLURM_JOB_NODELIST=" + j.Nodes, "SLURM_NODELIST=" + j.Nodes, "SLUICE_URL=" + c.URL}
	if j.QOS != "" {
		env = append(env, "SLURM_JOB_QOS="+j.QOS)
	}
	if j.Cluster != "" {
		env = append(env, "SLURM_CLUSTER_NAME="+j.Cluster)
	}
	n, ok := j.NodeCount.Value()
	if ok && n > 0 {
		env = append(env, "SLURM_JOB_NUM_NODES="+strconv.FormatInt(n, 10), "SLURM_NNODES="+strconv.FormatInt(n, 10))
		if cpus, ok := j.CPUs.Value(); ok && cpus >= n {
			// A job's nodes are alike: each has its share of the CPUs.
			env = append(env, "SLURM_JOB_CPUS_PER_NODE="+slurmapi.RepeatedCounts(slices.Repeat([]int{int(cpus / n)}, int(n))))
		}
		if tasks, ok := j.Tasks.Value(); ok && tasks > 0 {
			env = append(env, "SLURM_TASKS_PER_NODE="+slurmapi.RepeatedCounts(slurmapi.BlockCounts(int(tasks), int(n))))
		}
	}
	if tpn, ok := j.TasksPerNode.Value(); ok && tpn > 0 {
		env = append(env, "SLURM_NTASKS_PER_NODE="+strconv.FormatInt(tpn, 10))
	}
	if dir, err := os.Getwd(); err == nil {
		env = append(env, "SLURM_SUBMIT_DIR="+dir)
	}
	if host, err := os.Hostname(); err == nil {
		env = append(env, "SLURM_SUBMIT_HOST="+host)
	}
	return env
}
