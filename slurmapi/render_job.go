package slurmapi

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// The render functions build each response in the union of all versions'
// fields (the newest names, no-value structs where any version has them);
// the version's shape then drops and converts what that version lacks.

// unixNoVal is a time as Slurm writes one: unset for the zero time.
func unixNoVal(t time.Time) map[string]any {
	if t.IsZero() {
		return NoVal{Set: true, Number: 0}.tree()
	}
	return Num(t.Unix()).tree()
}

// minutesNoVal writes a time limit in minutes; Unlimited is infinite.
func minutesNoVal(d time.Duration) map[string]any {
	switch {
	case d == sbatch.Unlimited:
		return Infinite().tree()
	case d == 0:
		return NoVal{}.tree()
	}
	return Num(int64(d / time.Minute)).tree()
}

// exitCode renders process_exit_code_verbose.
func exitCode(j *Job) map[string]any {
	status := "SUCCESS"
	switch {
	case isPending(j) || isRunning(j):
		status = "PENDING"
	case j.Signal != 0:
		status = "SIGNALED"
	case j.ExitCode != 0:
		status = "ERROR"
	}
	return map[string]any{
		"status":      []any{status},
		"return_code": Num(int64(j.ExitCode)).tree(),
		"signal":      map[string]any{"id": Num(int64(j.Signal)).tree(), "name": signalName(j.Signal)},
	}
}

func isPending(j *Job) bool { return len(j.State) > 0 && j.State[0] == "PENDING" }
func isRunning(j *Job) bool { return len(j.State) > 0 && j.State[0] == "RUNNING" }

// tresPerNode renders the GPU request as slurmctld stores it.
func tresPerNode(g GPURequest) string {
	switch {
	case g.Fraction > 0 && g.Shards > 0:
		return fmt.Sprintf("gres/shard:%d", g.Shards)
	case g.Fraction > 0:
		return fmt.Sprintf("gres/mps:%d", int(g.Fraction*100+0.5))
	case g.PerNode > 0 && g.Type != "":
		return fmt.Sprintf("gres/gpu:%s:%d", g.Type, g.PerNode)
	case g.PerNode > 0:
		return fmt.Sprintf("gres/gpu:%d", g.PerNode)
	}
	return ""
}

func gpuCount(g GPURequest, n int) string {
	if n == 0 {
		return ""
	}
	if g.Type != "" {
		return fmt.Sprintf("gres/gpu:%s:%d", g.Type, n)
	}
	return fmt.Sprintf("gres/gpu:%d", n)
}

func strList(items []string) []any {
	out := make([]any, len(items))
	for i, s := range items {
		out[i] = s
	}
	return out
}

// renderJob renders one job as job_info (squeue, scontrol show job).
func renderJob(j *Job, cluster string) map[string]any {
	d := &j.Desc
	reason := j.Reason
	if reason == "" {
		reason = "None"
	}
	m := map[string]any{
		"job_id": int64(j.ID), "name": d.Name, "user_name": d.User, "account": d.Account,
		"partition": d.Partition, "qos": d.QOS, "cluster": cluster,
		"job_state": strList(j.State), "state_reason": reason, "state_description": "",
		"submit_time": unixNoVal(j.SubmitTime), "eligible_time": unixNoVal(j.SubmitTime),
		"start_time": unixNoVal(j.StartTime), "end_time": unixNoVal(j.EndTime),
		"time_limit": minutesNoVal(d.TimeLimit), "priority": Num(j.Priority).tree(),
		"nice": d.Nice, "nodes": j.NodeList, "node_count": Num(int64(max(len(j.NodeNames), d.Nodes))).tree(),
		"max_nodes": Num(int64(d.MaxNodes)).tree(),
		"tasks":     Num(int64(d.Tasks)).tree(), "cpus_per_task": Num(int64(d.CPUsPerTask)).tree(),
		"cpus": Num(int64(j.CPUs)).tree(), "tres_req_str": j.TRESReq, "tres_alloc_str": j.TRESAlloc,
		"tres_per_node": tresPerNode(d.GPUs), "tres_per_task": gpuCount(d.GPUs, d.GPUs.PerTask),
		"tres_per_job": gpuCount(d.GPUs, d.GPUs.PerJob),
		"exit_code":    exitCode(j), "derived_exit_code": exitCode(j),
		"batch_flag": !j.Manifest, "hold": d.Hold, "requeue": d.Requeue, "command": d.Command,
		"dependency": d.Dependency, "comment": d.Comment, "container": d.ContainerImage,
		"current_working_directory": d.WorkDir, "flags": []any{}, "shared": []any{}, "resv_name": d.Reservation,
	}
	m["standard_output"], m["standard_error"], m["standard_input"] = jobStreams(j)
	if d.TasksPerNode > 0 {
		m["tasks_per_node"] = Num(int64(d.TasksPerNode)).tree()
	}
	if d.MemoryPerNode > 0 {
		m["memory_per_node"] = Num(d.MemoryPerNode).tree()
	}
	if d.MemoryPerCPU > 0 {
		m["memory_per_cpu"] = Num(d.MemoryPerCPU).tree()
	}
	if d.MemoryPerGPU > 0 {
		m["memory_per_tres"] = fmt.Sprintf("gres/gpu:%d", d.MemoryPerGPU)
	}
	if !d.BeginTime.IsZero() {
		m["eligible_time"] = unixNoVal(d.BeginTime)
	}
	if j.ArrayTaskID != nil {
		m["array_job_id"] = Num(int64(j.ArrayJobID)).tree()
		m["array_task_id"] = Num(int64(*j.ArrayTaskID)).tree()
	} else if d.Array != "" {
		m["array_job_id"] = Num(int64(j.ID)).tree()
		m["array_task_id"] = NoVal{}.tree()
		m["array_task_string"] = j.ArrayPending // the tasks not split off yet
		if a, err := sbatch.ParseArray(d.Array); err == nil && a.MaxRunning > 0 {
			m["array_max_tasks"] = Num(int64(a.MaxRunning)).tree()
		}
	}
	return m
}

// renderJobs is the job_info_resp payload.
func renderJobs(jobs []Job, cluster string, now time.Time) map[string]any {
	list := make([]any, len(jobs))
	for i := range jobs {
		list[i] = renderJob(&jobs[i], cluster)
	}
	return map[string]any{"jobs": list, "last_backfill": unixNoVal(now), "last_update": unixNoVal(now)}
}

// renderDBJob renders a job as slurmdbd's job record (sacct).
func renderDBJob(j *Job, cluster string) map[string]any {
	d := &j.Desc
	elapsed := int64(0)
	if !j.StartTime.IsZero() {
		end := j.EndTime
		if end.IsZero() {
			end = time.Now()
		}
		elapsed = int64(end.Sub(j.StartTime) / time.Second)
	}
	m := map[string]any{
		"job_id": int64(j.ID), "name": d.Name, "user": d.User, "account": d.Account,
		"partition": d.Partition, "qos": d.QOS, "cluster": cluster, "nodes": j.NodeList,
		"allocation_nodes": int64(len(j.NodeNames)),
		"association":      map[string]any{"account": d.Account, "cluster": cluster, "partition": d.Partition, "user": d.User},
		"state":            map[string]any{"current": strList(j.State), "reason": j.Reason},
		"time": map[string]any{
			"elapsed": elapsed, "eligible": j.SubmitTime.Unix(), "submission": j.SubmitTime.Unix(),
			"start": unixOrZero(j.StartTime), "end": unixOrZero(j.EndTime), "limit": minutesNoVal(d.TimeLimit),
		},
		"exit_code": exitCode(j), "derived_exit_code": exitCode(j),
		"tres":              map[string]any{"requested": tresList(j.TRESReq), "allocated": tresList(j.TRESAlloc)},
		"working_directory": d.WorkDir, "stdout": d.Stdout, "stderr": d.Stderr,
		"hold": d.Hold, "priority": Num(j.Priority).tree(), "flags": []any{}, "steps": []any{},
		"comment": map[string]any{"job": d.Comment}, "container": d.ContainerImage,
	}
	if j.ArrayTaskID != nil {
		m["array"] = map[string]any{"job_id": int64(j.ArrayJobID), "task_id": Num(int64(*j.ArrayTaskID)).tree()}
	}
	return m
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// tresList reads "cpu=16,mem=64G,gres/gpu=8" into tres entries.
func tresList(s string) []any {
	out := []any{}
	if s == "" {
		return out
	}
	for _, item := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(item, "=")
		typ, name, _ := strings.Cut(k, "/")
		n, _ := sbatch.ParseMemory(v)
		if typ != "mem" {
			// Counts are integers in the spec; a GPU fraction (gres/gpu=0.5) holds
			// part of one device, counted as that device (tres_*_str keeps the fraction).
			var f float64
			fmt.Sscan(v, &f)
			n = int64(math.Ceil(f))
		}
		out = append(out, map[string]any{"type": typ, "name": name, "count": n})
	}
	return out
}
