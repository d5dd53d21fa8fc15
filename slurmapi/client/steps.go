package client

import (
	"context"
	"strconv"

	"github.com/sluicehq/sluice/accounting"
)

// JobSteps is a job's steps as the server knows them now (its
// /sluice/v1/job/{id}/steps): the ledger's and, while the job runs, what
// its batch host says of them (RUNNING steps with their start).
func (c *Client) JobSteps(ctx context.Context, id uint32) ([]accounting.Step, error) {
	var out struct {
		Steps []accounting.Step `json:"steps"`
	}
	err := c.do(ctx, "GET", "/sluice/v1/job/"+strconv.FormatUint(uint64(id), 10)+"/steps", nil, nil, &out)
	return out.Steps, err
}
