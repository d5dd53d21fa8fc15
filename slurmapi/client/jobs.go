package client

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
)

// Job is what squeue and scontrol show of a job (v0.0.44 job_info).
type Job struct {
	JobID        uint32   `json:"job_id"`
	ArrayJobID   NoVal    `json:"array_job_id"`
	ArrayTaskID  NoVal    `json:"array_task_id"`
	Name         string   `json:"name"`
	UserName     string   `json:"user_name"`
	Account      string   `json:"account"`
	Partition    string   `json:"partition"`
	QOS          string   `json:"qos"`
	JobState     []string `json:"job_state"`
	StateReason  string   `json:"state_reason"`
	Nodes        string   `json:"nodes"`
	NodeCount    NoVal    `json:"node_count"`
	CPUs         NoVal    `json:"cpus"`
	Tasks        NoVal    `json:"tasks"`
	SubmitTime   NoVal    `json:"submit_time"`
	StartTime    NoVal    `json:"start_time"`
	EndTime      NoVal    `json:"end_time"`
	TimeLimit    NoVal    `json:"time_limit"`
	Priority     NoVal    `json:"priority"`
	Nice         int64    `json:"nice"`
	TRESReqStr   string   `json:"tres_req_str"`
	TRESAllocStr string   `json:"tres_alloc_str"`
	Command      string   `json:"command"`
	WorkDir      string   `json:"current_working_directory"`
	StdOut       string   `json:"standard_output"`
	StdErr       string   `json:"standard_error"`
	Requeue      bool     `json:"requeue"`
	RestartCount int64    `json:"restart_cnt"`
	Comment      string   `json:"comment"`
	Reservation  string   `json:"resv_name"`
	ExitCode     ExitCode `json:"exit_code"`

	// What scontrol show job adds to squeue's view.
	Cluster          string `json:"cluster"`
	EligibleTime     NoVal  `json:"eligible_time"`
	Dependency       string `json:"dependency"`
	Hold             bool   `json:"hold"`
	BatchFlag        bool   `json:"batch_flag"`
	MaxNodes         NoVal  `json:"max_nodes"`
	CPUsPerTask      NoVal  `json:"cpus_per_task"`
	TasksPerNode     NoVal  `json:"tasks_per_node"`
	MemoryPerNode    NoVal  `json:"memory_per_node"`
	MemoryPerCPU     NoVal  `json:"memory_per_cpu"`
	TRESPerNode      string `json:"tres_per_node"`
	TRESPerTask      string `json:"tres_per_task"`
	TRESPerJob       string `json:"tres_per_job"`
	Container        string `json:"container"`
	StdIn            string `json:"standard_input"`
	ArrayTaskString  string `json:"array_task_string"`
	ArrayMaxTasks    NoVal  `json:"array_max_tasks"`
	StateDescription string `json:"state_description"`
}

// ExitCode is v0.0.44's process_exit_code_verbose.
type ExitCode struct {
	Status     []string `json:"status"`
	ReturnCode NoVal    `json:"return_code"`
	Signal     struct {
		ID   NoVal  `json:"id"`
		Name string `json:"name"`
	} `json:"signal"`
}

// State is the job's primary state (the first of job_state).
func (j Job) State() string {
	if len(j.JobState) == 0 {
		return "UNKNOWN"
	}
	return j.JobState[0]
}

// ShownState is the state squeue and scontrol print: COMPLETING for a job that ended
// while its pods still terminate (the COMPLETING flag of job_state), as Slurm's print a
// completing job's state, else State.
func (j Job) ShownState() string {
	if slices.Contains(j.JobState, "COMPLETING") {
		return "COMPLETING"
	}
	return j.State()
}

// Jobs lists the jobs the caller may see.
func (c *Client) Jobs(ctx context.Context) ([]Job, error) {
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	err := c.do(ctx, "GET", "/slurm/"+Version+"/jobs/", nil, nil, &out)
	return out.Jobs, err
}

// Job reads one job.
func (c *Client) Job(ctx context.Context, id uint32) (Job, error) {
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	if err := c.do(ctx, "GET", "/slurm/"+Version+"/job/"+strconv.FormatUint(uint64(id), 10), nil, nil, &out); err != nil {
		return Job{}, err
	}
	if len(out.Jobs) == 0 {
		return Job{}, fmt.Errorf("job %d not found", id)
	}
	return out.Jobs[0], nil
}

// JobRecords reads what scontrol show job shows for ref: one job ("12"),
// one array task ("12_3"), or an array's record with all its tasks (the
// array's id). IsNotFound(err) when there is no such job.
func (c *Client) JobRecords(ctx context.Context, ref string) ([]Job, error) {
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	err := c.do(ctx, "GET", "/slurm/"+Version+"/job/"+url.PathEscape(ref), nil, nil, &out)
	return out.Jobs, err
}

// Cancel signals a job (SIGKILL cancels it, like scancel).
func (c *Client) Cancel(ctx context.Context, id uint32, signal string) error {
	return c.CancelRef(ctx, strconv.FormatUint(uint64(id), 10), signal)
}

// CancelRef signals a job named as scancel names it: "123", or one array
// task "123_4" (only that task, as in Slurm).
func (c *Client) CancelRef(ctx context.Context, ref, signal string) error {
	q := url.Values{}
	if signal != "" {
		q.Set("signal", signal)
	}
	return c.do(ctx, "DELETE", "/slurm/"+Version+"/job/"+url.PathEscape(ref), q, nil, nil)
}

// Update changes a job's fields (hold, time_limit, priority, comment, name):
// the body of POST job/{job_id} is a job_desc_msg.
func (c *Client) Update(ctx context.Context, id uint32, fields map[string]any) error {
	return c.do(ctx, "POST", "/slurm/"+Version+"/job/"+strconv.FormatUint(uint64(id), 10), nil, fields, nil)
}

// Requeue returns a job to PENDING (held when hold is true, like scontrol
// requeuehold). Only data_parser v0.0.45 has the endpoint.
func (c *Client) Requeue(ctx context.Context, id uint32, hold bool) error {
	q := url.Values{}
	if hold {
		q.Set("Hold", "true")
	}
	return c.do(ctx, "GET", "/slurm/v0.0.45/job/"+strconv.FormatUint(uint64(id), 10)+"/requeue", q, nil, nil)
}
