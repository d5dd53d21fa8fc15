package client

import (
	"context"
	"fmt"
)

// KillFilter is a DELETE jobs/ request, as scancel's filters make one: every job the
// caller may change that all the filters given select.
type KillFilter struct {
	Jobs      []string `json:"jobs,omitempty"` // with filters: only these, if the filters select them
	Signal    string   `json:"signal,omitempty"`
	Account   string   `json:"account,omitempty"`
	JobName   string   `json:"job_name,omitempty"`
	Partition string   `json:"partition,omitempty"`
	QOS       string   `json:"qos,omitempty"`
	UserName  string   `json:"user_name,omitempty"`
	JobState  []string `json:"job_state,omitempty"`
}

// KillStatus is what the server did to one job a KillFilter selected.
type KillStatus struct {
	JobID NoVal `json:"job_id"`
	Error struct {
		Code    int    `json:"code"`
		String  string `json:"string"`
		Message string `json:"message"`
	} `json:"error"`
}

// Failed says why the job was not signalled, "" when it was.
func (s KillStatus) Failed() string {
	if s.Error.Code == 0 {
		return ""
	}
	return fmt.Sprintf("%s (%s)", s.Error.String, s.Error.Message)
}

// CancelMatching signals (cancels, without a signal) the jobs f selects and says what
// happened to each.
func (c *Client) CancelMatching(ctx context.Context, f KillFilter) ([]KillStatus, error) {
	var out struct {
		Status []KillStatus `json:"status"`
	}
	err := c.do(ctx, "DELETE", "/slurm/"+Version+"/jobs/", nil, f, &out)
	return out.Status, err
}
