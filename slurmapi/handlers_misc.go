package slurmapi

import (
	"net/http"
	"time"
)

// ping reports this server as the (only, primary) controller. With a
// backend, responding means the cluster answered.
func handlePing(s *Server, c *call) (map[string]any, error) {
	start := time.Now()
	up := true
	if s.backend != nil {
		_, err := s.backend.Catalog(c.ctx)
		up = err == nil
	}
	status := "UP"
	if !up {
		status = "DOWN"
	}
	return map[string]any{"pings": []any{map[string]any{
		"hostname": s.cfg.Hostname, "pinged": status, "status": status, "responding": up,
		"latency": time.Since(start).Microseconds(), "mode": "primary", "primary": true,
	}}}, nil
}

// licenses: Sluice manages no licenses; the list is empty, as on a Slurm
// cluster without Licenses= configured.
func handleLicenses(s *Server, c *call) (map[string]any, error) {
	return map[string]any{"licenses": []any{}, "last_update": Num(c.now.Unix()).tree()}, nil
}

// diag is sdiag: this server's own request counters, plus the cluster's
// job counters and scheduling cycle times when a backend is present.
func handleDiag(s *Server, c *call) (map[string]any, error) {
	var d Diag
	if s.backend != nil {
		var err error
		if d, err = s.backend.Diag(c.ctx); err != nil {
			return nil, err
		}
	}
	if s.cfg.SchedulerStats != nil {
		st := s.cfg.SchedulerStats()
		d.LastCycle, d.MaxCycle, d.MeanCycle, d.Cycles = st.Last, st.Max, st.Mean, st.Cycles
	}
	types, users := s.stats.snapshot()
	byType := make([]any, 0, len(types))
	for i, t := range types {
		byType = append(byType, map[string]any{
			"type_id": i + 1, "message_type": t.name, "count": t.count, "queued": 0, "dropped": 0,
			"cycle_last": 0, "cycle_max": 0,
			"total_time": t.total.Microseconds(), "average_time": Num(avgMicros(t)).tree(),
		})
	}
	byUser := make([]any, 0, len(users))
	for i, u := range users {
		byUser = append(byUser, map[string]any{
			"user_id": i + 1, "user": u.name, "count": u.count,
			"total_time": u.total.Microseconds(), "average_time": Num(avgMicros(u)).tree(),
		})
	}
	return map[string]any{"statistics": map[string]any{
		"req_time": Num(c.now.Unix()).tree(), "req_time_start": Num(s.started.Unix()).tree(),
		"server_thread_count": 1, "jobs_submitted": d.JobsSubmitted, "jobs_started": d.JobsStarted,
		"jobs_completed": d.JobsCompleted, "jobs_canceled": d.JobsCanceled, "jobs_failed": d.JobsFailed,
		"jobs_pending": d.JobsPending, "jobs_running": d.JobsRunning,
		"schedule_cycle_last": d.LastCycle.Microseconds(), "schedule_cycle_mean": d.MeanCycle.Microseconds(),
		"schedule_cycle_total": d.Cycles, "schedule_cycle_max": d.MaxCycle.Microseconds(),
		"schedule_cycle_sum":   (d.MeanCycle * time.Duration(d.Cycles)).Microseconds(),
		"rpcs_by_message_type": byType, "rpcs_by_user": byUser,
	}}, nil
}

func avgMicros(r rpcRow) int64 {
	if r.count == 0 {
		return 0
	}
	return r.total.Microseconds() / r.count
}

// serveOpenAPI answers /openapi/v3 with the document describing exactly
// what this server serves. It needs no token, like API documentation.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.doc)
}
