package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
)

func squeueSample() []client.Job {
	return []client.Job{
		{JobID: 42, Name: "train-llama", UserName: "alice", Partition: "h100", JobState: []string{"RUNNING"}, Priority: client.Set(900),
			Nodes: "h100-[0-1]", NodeCount: client.Set(2), StartTime: client.Set(1_700_000_000), TimeLimit: client.Set(1440)},
		{JobID: 43, Name: "eval", UserName: "bob", Partition: "a100", JobState: []string{"PENDING"}, Priority: client.Set(100),
			StateReason: "Resources", NodeCount: client.Set(1), TimeLimit: client.Set(60)},
		{JobID: 45, ArrayJobID: client.Set(45), ArrayTaskString: "4-15", ArrayMaxTasks: client.Set(3), Name: "sweep", UserName: "bob",
			Partition: "a100", JobState: []string{"PENDING"}, Priority: client.Set(500), StateReason: "Priority", NodeCount: client.Set(1),
			TimeLimit: client.NoVal{Set: true, Infinite: true}},
		{JobID: 44, Name: "prep", UserName: "alice", Partition: "h100", JobState: []string{"PENDING"}, Priority: client.Set(300),
			StateReason: "Dependency", NodeCount: client.Set(1), TimeLimit: client.Set(30)},
	}
}

// TestSqueueLayouts: squeue's default sort (partition, state, priority
// highest first), -l and --start, in Slurm's documented layouts.
func TestSqueueLayouts(t *testing.T) {
	now := time.Unix(1_700_000_100, 0)
	for _, tc := range []struct{ name, format, sort string }{
		{"squeue-default.golden", squeueDefaultFormat, squeueDefaultSort},
		{"squeue-long.golden", squeueLongFormat, squeueDefaultSort},
		{"squeue-start.golden", squeueStartFormat, squeueDefaultSort},
		{"squeue-sort-user-then-id-desc.golden", squeueDefaultFormat, "u,-i"},
	} {
		jobs := squeueSample()
		if tc.name == "squeue-start.golden" {
			jobs = filterJobs(jobs, jobFilter{states: []string{"PENDING"}})
		}
		if err := sortJobs(jobs, tc.sort, now); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := writeTable(&b, tc.format, squeueHeaders, false, len(jobs), func(r int, l byte) string { return squeueValue(jobs[r], l, now) }); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, tc.name, b.String())
	}
	if err := sortJobs(squeueSample(), "i,zz", now); err == nil {
		t.Error("a bad sort key was accepted")
	}
}

// TestSqueueShowsCompleting: a job that ended while its pods still terminate is listed
// by default and shown as COMPLETING (CG), as Slurm's squeue shows it; once its pods are
// gone it leaves the default list.
func TestSqueueShowsCompleting(t *testing.T) {
	now := time.Unix(1_700_000_100, 0)
	jobs := []client.Job{
		{JobID: 50, JobState: []string{"CANCELLED", "COMPLETING"}},
		{JobID: 51, JobState: []string{"CANCELLED"}},
		{JobID: 52, JobState: []string{"PENDING", "REQUEUED"}},
	}
	listed := filterJobs(jobs, jobFilter{})
	if len(listed) != 2 || listed[0].JobID != 50 || listed[1].JobID != 52 {
		t.Fatalf("listed %v, want jobs 50 and 52", listed)
	}
	if got := squeueValue(listed[0], 't', now); got != "CG" {
		t.Errorf("%%t: %q, want CG", got)
	}
	if got := squeueValue(listed[0], 'T', now); got != "COMPLETING" {
		t.Errorf("%%T: %q, want COMPLETING", got)
	}
	if got := squeueValue(listed[1], 'T', now); got != "PENDING" {
		t.Errorf("a requeued job's %%T: %q, want PENDING", got)
	}
}
