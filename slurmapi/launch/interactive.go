package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

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
// (a running job's launcher starts after its init container).
const attachWait = 2 * time.Minute

// AttachWhenUp is Attach, retried while the server says the job's batch
// host is not there yet (409) or its launcher not listening yet (502).
func AttachWhenUp(ctx context.Context, c *client.Client, id uint32, req AttachRequest, t Terminal) (int, error) {
	deadline := time.Now().Add(attachWait)
	for {
		rc, err := Attach(ctx, c.URL, c.Token, id, req, t)
		var apiErr *client.APIError
		if err == nil || !errors.As(err, &apiErr) || (apiErr.Status != http.StatusConflict && apiErr.Status != http.StatusBadGateway) || time.Now().After(deadline) {
			return rc, err
		}
		select {
		case <-ctx.Done():
			return 1, err
		case <-time.After(time.Second):
		}
	}
}

// Release ends an allocation with the status of the user's shell.
func Release(ctx context.Context, c *client.Client, id uint32, rc int) error {
	rc = min(max(rc, 0), 255)
	_, err := AttachWhenUp(ctx, c, id, AttachRequest{Release: &rc}, Terminal{In: nil})
	return err
}

// AllocationEnv is what salloc's shell gets, as Slurm's salloc sets it,
// so `sluice srun` inside runs steps in the allocation.
func AllocationEnv(a *Allocation, c *client.Client) []string {
	j := a.Job
	env := []string{"SLURM_JOB_ID=" + strconv.FormatUint(uint64(a.ID), 10), "SLURM_JOBID=" + strconv.FormatUint(uint64(a.ID), 10),
		"SLURM_JOB_NAME=" + j.Name, "SLURM_JOB_PARTITION=" + j.Partition, "SLURM_JOB_ACCOUNT=" + j.Account,
		"SLURM_JOB_NODELIST=" + j.Nodes, "SLURM_NODELIST=" + j.Nodes, "SLUICE_URL=" + c.URL}
	if n, ok := j.NodeCount.Value(); ok {
		env = append(env, "SLURM_JOB_NUM_NODES="+strconv.FormatInt(n, 10), "SLURM_NNODES="+strconv.FormatInt(n, 10))
	}
	return env
}
