package client

import "context"

// Allocate asks for an allocation (POST job/allocate): job is a v0.0.44
// job_desc_msg without a script. It returns the job id and the server's
// warnings.
func (c *Client) Allocate(ctx context.Context, job map[string]any) (uint32, []string, error) {
	var out struct {
		JobID    uint32 `json:"job_id"`
		Warnings []struct {
			Description string `json:"description"`
		} `json:"warnings"`
	}
	if err := c.do(ctx, "POST", "/slurm/"+Version+"/job/allocate", nil, map[string]any{"job": job}, &out); err != nil {
		return 0, nil, err
	}
	var warnings []string
	for _, w := range out.Warnings {
		warnings = append(warnings, w.Description)
	}
	return out.JobID, warnings, nil
}
