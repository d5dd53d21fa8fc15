package report

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// SacctQuery is what sacct filters on: users (-u), accounts (-A), partitions
// (-r), states (-s), job ids (-j) and a window (-S, -E).
type SacctQuery struct {
	Filter accounting.JobFilter
}

// Sacct returns the matching jobs from the ledger, by job id.
func Sacct(ctx context.Context, s accounting.Store, q SacctQuery) ([]accounting.Job, error) {
	f := q.Filter
	if !f.Start.IsZero() && !f.End.IsZero() && !f.End.After(f.Start) {
		return nil, fmt.Errorf("sacct: end time %s is not after start time %s", slurmTime(f.End), slurmTime(f.Start))
	}
	jobs, err := s.Jobs(ctx, f)
	if err != nil || len(jobs) == 0 {
		return jobs, err
	}
	ids := make([]int64, len(jobs))
	at := make(map[int64]int, len(jobs))
	for i, j := range jobs {
		ids[i], at[j.JobID] = j.JobID, i
	}
	steps, err := s.Steps(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, st := range steps {
		if i, ok := at[st.JobID]; ok {
			jobs[i].Steps = append(jobs[i].Steps, st)
		}
	}
	return jobs, nil
}

// sacctField renders one sacct column for a job as of now.
type sacctField struct {
	Column
	value func(j accounting.Job, now time.Time) string
}

var sacctFields = []sacctField{
	{Column{"Account", 10}, func(j accounting.Job, _ time.Time) string { return j.Account }},
	{Column{"AllocCPUS", 10}, func(j accounting.Job, _ time.Time) string { return strconv.FormatInt(j.Allocated.CPUs, 10) }},
	{Column{"AllocNodes", 10}, func(j accounting.Job, _ time.Time) string { return strconv.FormatInt(j.Allocated.Nodes, 10) }},
	{Column{"AllocTRES", 10}, func(j accounting.Job, _ time.Time) string { return j.Allocated.String() }},
	{Column{"CPUTime", 10}, func(j accounting.Job, now time.Time) string {
		return duration(int64(elapsed(j, now).Seconds()) * j.Allocated.CPUs)
	}},
	{Column{"CPUTimeRAW", 10}, func(j accounting.Job, now time.Time) string {
		return strconv.FormatInt(int64(elapsed(j, now).Seconds())*j.Allocated.CPUs, 10)
	}},
	{Column{"Elapsed", 10}, func(j accounting.Job, now time.Time) string { return duration(int64(elapsed(j, now).Seconds())) }},
	{Column{"ElapsedRaw", 10}, func(j accounting.Job, now time.Time) string {
		return strconv.FormatInt(int64(elapsed(j, now).Seconds()), 10)
	}},
	{Column{"Eligible", 19}, func(j accounting.Job, _ time.Time) string { return slurmTime(j.Eligible) }},
	{Column{"End", 19}, func(j accounting.Job, _ time.Time) string { return slurmTime(j.End) }},
	{Column{"ExitCode", 8}, func(j accounting.Job, _ time.Time) string { return fmt.Sprintf("%d:%d", j.ExitCode, j.ExitSignal) }},
	{Column{"JobID", -12}, func(j accounting.Job, _ time.Time) string { return jobID(j) }},
	{Column{"JobIDRaw", -12}, func(j accounting.Job, _ time.Time) string { return strconv.FormatInt(j.JobID, 10) }},
	{Column{"JobName", 10}, func(j accounting.Job, _ time.Time) string { return j.Name }},
	{Column{"NCPUS", 10}, func(j accounting.Job, _ time.Time) string { return strconv.FormatInt(j.Allocated.CPUs, 10) }},
	{Column{"NNodes", 8}, func(j accounting.Job, _ time.Time) string { return strconv.FormatInt(j.Allocated.Nodes, 10) }},
	{Column{"NodeList", 15}, func(j accounting.Job, _ time.Time) string { return nodeList(j.NodeList) }},
	{Column{"Partition", 10}, func(j accounting.Job, _ time.Time) string { return j.Partition }},
	{Column{"QOS", 10}, func(j accounting.Job, _ time.Time) string { return j.QOS }},
	{Column{"ReqCPUS", 8}, func(j accounting.Job, _ time.Time) string { return strconv.FormatInt(j.Requested.CPUs, 10) }},
	{Column{"ReqMem", 10}, func(j accounting.Job, _ time.Time) string { return strconv.FormatInt(j.Requested.MemMB, 10) + "M" }},
	{Column{"ReqNodes", 8}, func(j accounting.Job, _ time.Time) string { return strconv.FormatInt(j.Requested.Nodes, 10) }},
	{Column{"ReqTRES", 10}, func(j accounting.Job, _ time.Time) string { return j.Requested.String() }},
	{Column{"Reservation", 20}, func(j accounting.Job, _ time.Time) string { return j.Reservation }},
	{Column{"Start", 19}, func(j accounting.Job, _ time.Time) string { return slurmTime(j.Start) }},
	{Column{"State", 10}, func(j accounting.Job, _ time.Time) string { return string(j.State) }},
	{Column{"Submit", 19}, func(j accounting.Job, _ time.Time) string { return slurmTime(j.Submit) }},
	{Column{"User", 9}, func(j accounting.Job, _ time.Time) string { return j.User }},
}

// SacctDefaultFormat is Slurm's default field list plus AllocTRES, widened
// so the GPU count is not cut off.
const SacctDefaultFormat = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode,AllocTRES%40"

// SacctColumns lists every field sacct's --format accepts, with Slurm's widths.
func SacctColumns() []Column {
	out := make([]Column, len(sacctFields))
	for i, f := range sacctFields {
		out[i] = f.Column
	}
	return out
}

// SacctTable lays jobs out in the given --format ("" means
// SacctDefaultFormat); now is the clock for elapsed time of running jobs.
func SacctTable(jobs []accounting.Job, format string, now time.Time) (Table, error) {
	if format == "" {
		format = SacctDefaultFormat
	}
	cols, err := ParseFieldList(format, SacctColumns())
	if err != nil {
		return Table{}, fmt.Errorf("sacct --format: %w", err)
	}
	values := make([]func(accounting.Job, time.Time) string, len(cols))
	for i, c := range cols {
		for _, f := range sacctFields {
			if f.Name == c.Name {
				values[i] = f.value
			}
		}
	}
	t := Table{Columns: cols}
	for _, j := range jobs {
		row := make([]string, len(cols))
		for i, v := range values {
			row[i] = v(j, now)
		}
		t.Rows = append(t.Rows, row)
		for _, st := range j.Steps {
			sj := stepRow(j, st)
			row := make([]string, len(cols))
			for i, v := range values {
				switch cols[i].Name {
				case "JobID":
					row[i] = jobID(j) + "." + st.StepID
				case "JobIDRaw":
					row[i] = strconv.FormatInt(j.JobID, 10) + "." + st.StepID
				default:
					row[i] = v(sj, now)
				}
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t, nil
}

// stepRow is a step as sacct lists it under its job: its own name, state,
// exit code, times and TRES; the job's account; no partition, QOS, user
// or request (sacct leaves those blank on step lines).
func stepRow(j accounting.Job, s accounting.Step) accounting.Job {
	return accounting.Job{JobID: j.JobID, ArrayJobID: j.ArrayJobID, ArrayTaskID: j.ArrayTaskID, Name: s.Name,
		Account: j.Account, Start: s.Start, End: s.End, State: s.State, ExitCode: s.ExitCode, ExitSignal: s.Signal,
		Allocated: s.TRES, NodeList: s.NodeList}
}

// jobID prints an array task as Slurm does: arrayjobid_taskid.
func jobID(j accounting.Job) string {
	if j.ArrayJobID > 0 && j.ArrayTaskID >= 0 {
		return fmt.Sprintf("%d_%d", j.ArrayJobID, j.ArrayTaskID)
	}
	return strconv.FormatInt(j.JobID, 10)
}

func nodeList(s string) string {
	if s == "" {
		return "None assigned"
	}
	// The ledger keeps a job's nodes as "a,b" and a step's as a host list, whose
	// commas may sit inside brackets ("h100-[0,2]"): expand either, then print
	// one host list, as sacct does.
	names, err := sbatch.ParseNodeList(s)
	if err != nil {
		return s
	}
	return sbatch.HostList(names)
}

// elapsed is how long the job has held its allocation in its latest run.
func elapsed(j accounting.Job, now time.Time) time.Duration {
	if j.Start.IsZero() {
		return 0
	}
	end := j.End
	if end.IsZero() {
		end = now
	}
	if end.Before(j.Start) {
		return 0
	}
	return end.Sub(j.Start)
}

// slurmTime prints a time as Slurm does (UTC here), "Unknown" when unset.
func slurmTime(t time.Time) string {
	if t.IsZero() {
		return "Unknown"
	}
	return t.UTC().Format("2006-01-02T15:04:05")
}

// duration prints seconds as Slurm's [D-]HH:MM:SS.
func duration(secs int64) string {
	d, h, m, s := secs/86400, secs%86400/3600, secs%3600/60, secs%60
	if d > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", d, h, m, s)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
}
