package client

import "context"

// Diag is what sdiag shows (v0.0.44 stats_msg); times are microseconds.
type Diag struct {
	ReqTime           NoVal  `json:"req_time"`
	ReqTimeStart      NoVal  `json:"req_time_start"`
	ServerThreadCount int64  `json:"server_thread_count"`
	JobsSubmitted     int64  `json:"jobs_submitted"`
	JobsStarted       int64  `json:"jobs_started"`
	JobsCompleted     int64  `json:"jobs_completed"`
	JobsCanceled      int64  `json:"jobs_canceled"`
	JobsFailed        int64  `json:"jobs_failed"`
	JobsPending       int64  `json:"jobs_pending"`
	JobsRunning       int64  `json:"jobs_running"`
	CycleLast         int64  `json:"schedule_cycle_last"`
	CycleMax          int64  `json:"schedule_cycle_max"`
	CycleTotal        int64  `json:"schedule_cycle_total"`
	CycleMean         int64  `json:"schedule_cycle_mean"`
	RPCsByType        []RPCs `json:"rpcs_by_message_type"`
	RPCsByUser        []RPCs `json:"rpcs_by_user"`
}

// RPCs is one line of sdiag's RPC statistics, by message type or user.
type RPCs struct {
	TypeID      int64  `json:"type_id"`
	MessageType string `json:"message_type"`
	UserID      int64  `json:"user_id"`
	User        string `json:"user"`
	Count       int64  `json:"count"`
	AverageTime NoVal  `json:"average_time"`
	TotalTime   int64  `json:"total_time"`
}

// Diag reads the controller's statistics (GET diag).
func (c *Client) Diag(ctx context.Context) (Diag, error) {
	var out struct {
		Statistics Diag `json:"statistics"`
	}
	err := c.do(ctx, "GET", "/slurm/"+Version+"/diag", nil, nil, &out)
	return out.Statistics, err
}
