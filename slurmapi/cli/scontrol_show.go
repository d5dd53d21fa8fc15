package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// record is one object as scontrol shows it: lines of Key=Value pairs, the
// first flush left and the rest indented three spaces.
type record [][]string

// write prints the record as scontrol does, or on one line with
// --oneliner; a blank line follows each multi-line record.
func (r record) write(w io.Writer, oneLine bool) {
	if oneLine {
		var all []string
		for _, line := range r {
			all = append(all, line...)
		}
		fmt.Fprintln(w, strings.Join(all, " "))
		return
	}
	for i, line := range r {
		if i > 0 {
			io.WriteString(w, "   ")
		}
		fmt.Fprintln(w, strings.Join(line, " "))
	}
	fmt.Fprintln(w)
}

func kv(key, value string) string { return key + "=" + oneLine(value) }

// orNull is how scontrol writes an empty string.
func orNull(s string) string {
	if s == "" {
		return "(null)"
	}
	return s
}

// scontrolTime writes a UNIX time as scontrol does; unset is Unknown.
func scontrolTime(v client.NoVal) string {
	t, ok := v.Value()
	if !ok || t == 0 {
		return "Unknown"
	}
	return time.Unix(t, 0).Format("2006-01-02T15:04:05")
}

// scontrolLimit writes a limit in minutes: UNLIMITED when infinite, unset
// as none, else [days-]HH:MM:SS.
func scontrolLimit(v client.NoVal, none string) string {
	switch {
	case v.Infinite:
		return "UNLIMITED"
	case !v.Set:
		return none
	}
	return sbatch.FormatTimeLimit(time.Duration(v.Number) * time.Minute)
}

func noValString(v client.NoVal, unset string) string {
	n, ok := v.Value()
	if !ok {
		return unset
	}
	return strconv.FormatInt(n, 10)
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// jobRecord is `scontrol show job`'s view of one job at time now.
func jobRecord(j client.Job, now time.Time) record {
	first := []string{kv("JobId", strconv.FormatUint(uint64(j.JobID), 10))}
	if task, ok := j.ArrayTaskID.Value(); ok {
		arr, _ := j.ArrayJobID.Value()
		first = append(first, kv("ArrayJobId", strconv.FormatInt(arr, 10)), kv("ArrayTaskId", strconv.FormatInt(task, 10)))
	} else if j.ArrayTaskString != "" {
		first = append(first, kv("ArrayJobId", strconv.FormatUint(uint64(j.JobID), 10)), kv("ArrayTaskId", j.ArrayTaskString))
		if n, ok := j.ArrayMaxTasks.Value(); ok && n > 0 {
			first = append(first, kv("ArrayTaskThrottle", strconv.FormatInt(n, 10)))
		}
	}
	first = append(first, kv("JobName", j.Name))
	reason := j.StateReason
	if reason == "" {
		reason = "None"
	}
	rc, _ := j.ExitCode.ReturnCode.Value()
	sig, _ := j.ExitCode.Signal.ID.Value()
	nodeList := j.Nodes
	batchHost := ""
	if nodeList != "" {
		batchHost = firstHost(nodeList)
	}
	r := record{
		first,
		{kv("UserId", j.UserName), kv("Account", j.Account), kv("QOS", orNull(j.QOS))},
		{kv("Priority", noValString(j.Priority, "0")), kv("Hold", yesNo(j.Hold))},
		{kv("JobState", j.ShownState()), kv("Reason", reason), kv("Dependency", orNull(j.Dependency))},
		{kv("Requeue", boolDigit(j.Requeue)), kv("Restarts", strconv.FormatInt(j.RestartCount, 10)),
			kv("BatchFlag", boolDigit(j.BatchFlag)), kv("ExitCode", fmt.Sprintf("%d:%d", rc, sig))},
		{kv("RunTime", sbatch.FormatTimeLimit(elapsed(j, now).Truncate(time.Second))), kv("TimeLimit", scontrolLimit(j.TimeLimit, "UNLIMITED"))},
		{kv("SubmitTime", scontrolTime(j.SubmitTime)), kv("EligibleTime", scontrolTime(j.EligibleTime))},
		{kv("StartTime", scontrolTime(j.StartTime)), kv("EndTime", scontrolTime(j.EndTime))},
		{kv("Partition", j.Partition)},
		{kv("NodeList", orNull(nodeList))},
	}
	if batchHost != "" {
		r = append(r, []string{kv("BatchHost", batchHost)})
	}
	r = append(r, []string{kv("NumNodes", noValString(j.NodeCount, "1")), kv("NumCPUs", noValString(j.CPUs, "1")),
		kv("NumTasks", noValString(j.Tasks, "1")), kv("CPUs/Task", noValString(j.CPUsPerTask, "1"))})
	if n, ok := j.TasksPerNode.Value(); ok {
		r = append(r, []string{kv("NtasksPerN:B:S:C", strconv.FormatInt(n, 10)+":0:*:*")})
	}
	r = append(r, []string{kv("ReqTRES", orNull(j.TRESReqStr))}, []string{kv("AllocTRES", orNull(j.TRESAllocStr))})
	if m, ok := j.MemoryPerNode.Value(); ok {
		r = append(r, []string{kv("MinMemoryNode", strconv.FormatInt(m, 10)+"M")})
	} else if m, ok := j.MemoryPerCPU.Value(); ok {
		r = append(r, []string{kv("MinMemoryCPU", strconv.FormatInt(m, 10)+"M")})
	}
	if j.Reservation != "" { // after the node requirements, as scontrol places it
		r = append(r, []string{kv("Reservation", j.Reservation)})
	}
	r = append(r,
		[]string{kv("Command", orNull(j.Command))},
		[]string{kv("WorkDir", orNull(j.WorkDir))},
		[]string{kv("Comment", orNull(j.Comment))},
		[]string{kv("StdErr", orNull(j.StdErr))},
		[]string{kv("StdIn", orNull(j.StdIn))},
		[]string{kv("StdOut", orNull(j.StdOut))},
	)
	if j.Container != "" {
		r = append(r, []string{kv("Container", j.Container)})
	}
	for _, t := range []struct{ key, v string }{{"TresPerNode", j.TRESPerNode}, {"TresPerTask", j.TRESPerTask}, {"TresPerJob", j.TRESPerJob}} {
		if t.v != "" {
			r = append(r, []string{kv(t.key, t.v)})
		}
	}
	return r
}

// firstHost is the first host of a node list expression ("h100-[3-4]" ->
// "h100-3"), where a job's batch script runs.
func firstHost(list string) string {
	head, rest, bracket := strings.Cut(list, "[")
	if !bracket {
		h, _, _ := strings.Cut(list, ",")
		return h
	}
	first := strings.FieldsFunc(rest, func(r rune) bool { return r == '-' || r == ',' || r == ']' })
	if len(first) == 0 {
		return head
	}
	return head + first[0]
}

// nodeRecord is `scontrol show node`'s view of one node.
func nodeRecord(n client.Node) record {
	state := strings.Join(n.State, "+")
	r := record{
		{kv("NodeName", n.Name), kv("Arch", orNull(n.Architecture))},
		{kv("CPUAlloc", strconv.FormatInt(n.AllocCPUs, 10)), kv("CPUEfctv", strconv.FormatInt(n.CPUs, 10)), kv("CPUTot", strconv.FormatInt(n.CPUs, 10))},
		{kv("AvailableFeatures", orNull(strings.Join(n.Features, ",")))},
		{kv("Topology", orNull(n.Topology))},
		{kv("Gres", orNull(n.GRES)), kv("GresUsed", orNull(n.GRESUsed))},
		{kv("NodeAddr", orNull(n.Address)), kv("NodeHostName", n.Name)},
		{kv("OS", orNull(n.OS))},
		{kv("RealMemory", strconv.FormatInt(n.RealMemory, 10)), kv("AllocMem", strconv.FormatInt(n.AllocMemory, 10))},
		{kv("State", orNull(state))},
		{kv("Partitions", orNull(strings.Join(n.Partitions, ",")))},
		{kv("BootTime", scontrolTime(n.BootTime))},
	}
	if n.Reason != "" {
		who := n.ReasonSetUser
		if who == "" {
			who = "sluice"
		}
		r = append(r, []string{kv("Reason", fmt.Sprintf("%s [%s@%s]", n.Reason, who, scontrolTime(n.ReasonChangedAt)))})
	}
	if n.Comment != "" {
		r = append(r, []string{kv("Comment", n.Comment)})
	}
	return r
}

// partitionRecord is `scontrol show partition`'s view of one partition.
func partitionRecord(p client.Partition) record {
	state := "UP"
	if len(p.Partition.State) > 0 {
		state = strings.Join(p.Partition.State, ",")
	}
	all := func(s string) string {
		if s == "" {
			return "ALL"
		}
		return s
	}
	maxNodes := "UNLIMITED"
	if n, ok := p.Maximums.Nodes.Value(); ok && n > 0 {
		maxNodes = strconv.FormatInt(n, 10)
	}
	return record{
		{kv("PartitionName", p.Name)},
		{kv("AllowAccounts", all(p.Accounts.Allowed)), kv("AllowQos", all(p.QOS.Allowed))},
		{kv("Default", yesNo(p.IsDefault()))},
		{kv("DefaultTime", scontrolLimit(p.Defaults.Time, "NONE")), kv("MaxNodes", maxNodes),
			kv("MaxTime", scontrolLimit(p.Maximums.Time, "UNLIMITED"))},
		{kv("Nodes", orNull(p.Nodes.Configured))},
		{kv("PriorityJobFactor", strconv.FormatInt(p.Priority.JobFactor, 10)), kv("PriorityTier", strconv.FormatInt(p.Priority.Tier, 10))},
		{kv("State", state), kv("TotalCPUs", strconv.FormatInt(p.CPUs.Total, 10)), kv("TotalNodes", strconv.FormatInt(p.Nodes.Total, 10))},
		{kv("TRES", orNull(p.TRES.Configured))},
	}
}
