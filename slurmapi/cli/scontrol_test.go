package cli

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
)

func TestScontrolShowJobLayout(t *testing.T) {
	now := time.Unix(1_700_000_100, 0).UTC()
	j := client.Job{
		JobID: 42, Name: "train", UserName: "alice", Account: "nlp", QOS: "normal", Partition: "h100",
		JobState: []string{"RUNNING"}, StateReason: "None", Nodes: "h100-[3-4]", NodeCount: client.Set(2),
		CPUs: client.Set(16), Tasks: client.Set(16), CPUsPerTask: client.Set(1), TasksPerNode: client.Set(8),
		Priority: client.Set(1000), Requeue: true, BatchFlag: true,
		SubmitTime: client.Set(1_700_000_000), EligibleTime: client.Set(1_700_000_000), StartTime: client.Set(1_700_000_040),
		TimeLimit: client.Set(90), TRESReqStr: "cpu=16,node=2,gres/gpu=16", TRESPerNode: "gres/gpu:8",
		Command: "/home/alice/train.sh", WorkDir: "/home/alice", StdOut: "/home/alice/slurm-42.out",
	}
	var b strings.Builder
	jobRecord(j, now).write(&b, false)
	got := b.String()
	ts := func(unix int64) string { return time.Unix(unix, 0).Format("2006-01-02T15:04:05") }
	for _, want := range []string{
		"JobId=42 JobName=train\n",
		"\n   UserId=alice Account=nlp QOS=normal\n",
		"\n   JobState=RUNNING Reason=None Dependency=(null)\n",
		"\n   Requeue=1 Restarts=0 BatchFlag=1 ExitCode=0:0\n",
		"\n   RunTime=00:01:00 TimeLimit=01:30:00\n",
		"\n   SubmitTime=" + ts(1_700_000_000) + " EligibleTime=" + ts(1_700_000_000) + "\n",
		"\n   StartTime=" + ts(1_700_000_040) + " EndTime=Unknown\n",
		"\n   NodeList=h100-[3-4]\n   BatchHost=h100-3\n",
		"\n   NumNodes=2 NumCPUs=16 NumTasks=16 CPUs/Task=1\n",
		"\n   ReqTRES=cpu=16,node=2,gres/gpu=16\n   AllocTRES=(null)\n",
		"\n   StdErr=(null)\n   StdIn=(null)\n   StdOut=/home/alice/slurm-42.out\n",
		"\n   TresPerNode=gres/gpu:8\n\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("scontrol show job lacks %q:\n%s", want, got)
		}
	}
	b.Reset()
	jobRecord(j, now).write(&b, true)
	if one := b.String(); strings.Count(one, "\n") != 1 || !strings.HasPrefix(one, "JobId=42 JobName=train UserId=alice ") {
		t.Errorf("--oneliner: %q", one)
	}
	// A multi-line comment stays on its line: it cannot forge a record's field.
	j.Comment = "ok\n   UserId=root(0) Account=admin\r"
	b.Reset()
	jobRecord(j, now).write(&b, false)
	if got := b.String(); strings.Contains(got, "\n   UserId=root") || !strings.Contains(got, `Comment=ok\n   UserId=root(0) Account=admin\r`) {
		t.Errorf("a comment with line breaks:\n%s", got)
	}
}

func TestScontrolShowArrayJobAndPending(t *testing.T) {
	tests := []struct {
		name string
		job  client.Job
		want []string
	}{
		{"array task", client.Job{JobID: 51, ArrayJobID: client.Set(50), ArrayTaskID: client.Set(1), Name: "sweep", JobState: []string{"PENDING"}, StateReason: "Priority"},
			[]string{"JobId=51 ArrayJobId=50 ArrayTaskId=1 JobName=sweep\n", "JobState=PENDING Reason=Priority", "RunTime=00:00:00", "StartTime=Unknown", "NodeList=(null)\n"}},
		{"array not started", client.Job{JobID: 50, ArrayJobID: client.Set(50), ArrayTaskString: "0-9", ArrayMaxTasks: client.Set(2), Name: "sweep", JobState: []string{"PENDING"}},
			[]string{"JobId=50 ArrayJobId=50 ArrayTaskId=0-9 ArrayTaskThrottle=2 JobName=sweep\n", "Reason=None"}},
		{"unlimited, held, failed", client.Job{JobID: 7, JobState: []string{"FAILED"}, TimeLimit: client.NoVal{Set: true, Infinite: true}, Hold: true,
			ExitCode: client.ExitCode{ReturnCode: client.Set(3)}},
			[]string{"TimeLimit=UNLIMITED", "Hold=YES", "ExitCode=3:0"}},
	}
	for _, tt := range tests {
		var b strings.Builder
		jobRecord(tt.job, time.Now()).write(&b, false)
		for _, w := range tt.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: lacks %q:\n%s", tt.name, w, b.String())
			}
		}
		if strings.Contains(b.String(), "BatchHost") {
			t.Errorf("%s: a job without nodes has a BatchHost:\n%s", tt.name, b.String())
		}
	}
}

func TestScontrolShowNodeAndPartition(t *testing.T) {
	n := client.Node{Name: "h100-3", State: []string{"IDLE", "DRAIN"}, Reason: "GPUXidError: XID 79", ReasonSetUser: "remediation",
		ReasonChangedAt: client.Set(1_700_000_000), Partitions: []string{"h100"}, CPUs: 64, GRES: "gpu:h100:8",
		Comment: "LastValidation=Failed 2026-12-03T14:00:00Z (3s, idle): validate exited 1", Topology: "zone=a,rack=r1", Features: []string{"ib"}}
	var b strings.Builder
	nodeRecord(n).write(&b, false)
	for _, w := range []string{"NodeName=h100-3 ", "\n   State=IDLE+DRAIN\n", "\n   AvailableFeatures=ib\n   Topology=zone=a,rack=r1\n", "\n   Gres=gpu:h100:8 GresUsed=(null)\n",
		"\n   Comment=LastValidation=Failed 2026-12-03T14:00:00Z (3s, idle): validate exited 1",
		"\n   Reason=GPUXidError: XID 79 [remediation@" + time.Unix(1_700_000_000, 0).Format("2006-01-02T15:04:05") + "]\n"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("show node lacks %q:\n%s", w, b.String())
		}
	}

	var p client.Partition
	p.Name, p.Flags = "h100", []string{"DEFAULT"}
	p.Nodes.Configured, p.Nodes.Total = "h100-[0-3]", 4
	p.Maximums.Time = client.Set(1440)
	p.Defaults.Time = client.Set(60)
	p.Maximums.Nodes = client.NoVal{Set: true, Infinite: true}
	b.Reset()
	partitionRecord(p).write(&b, false)
	for _, w := range []string{"PartitionName=h100\n", "\n   AllowAccounts=ALL AllowQos=ALL\n", "\n   Default=YES\n",
		"\n   DefaultTime=01:00:00 MaxNodes=UNLIMITED MaxTime=1-00:00:00\n", "\n   Nodes=h100-[0-3]\n", "State=UP TotalCPUs=0 TotalNodes=4"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("show partition lacks %q:\n%s", w, b.String())
		}
	}
}

func TestParseJobUpdate(t *testing.T) {
	tests := []struct {
		args    []string
		id      uint32
		fields  map[string]any
		problem string
	}{
		{[]string{"JobId=12", "TimeLimit=1:30:00"}, 12, map[string]any{"time_limit": client.Set(90)}, ""},
		{[]string{"jobid=12", "timelimit=UNLIMITED", "Priority=5"}, 12,
			map[string]any{"time_limit": client.NoVal{Set: true, Infinite: true}, "priority": client.Set(5)}, ""},
		{[]string{"JobId=3", "Comment=rerun", "JobName=eval"}, 3, map[string]any{"comment": "rerun", "name": "eval"}, ""},
		{[]string{"TimeLimit=10"}, 0, nil, "JobId=N"},
		{[]string{"JobId=3"}, 0, nil, "nothing to change"},
		{[]string{"JobId=x", "Priority=1"}, 0, nil, "invalid JobId"},
		{[]string{"JobId=3", "TimeLimit=soon"}, 0, nil, "invalid time limit"},
		{[]string{"JobId=3", "Partition=a100", "QOS=high", "Dependency=afterok:2", "Nice=10"}, 3,
			map[string]any{"partition": "a100", "qos": "high", "dependency": "afterok:2", "nice": int64(10)}, ""},
		{[]string{"JobId=3", "Features=x"}, 0, nil, "cannot be changed"},
		{[]string{"JobId=3", "Priority"}, 0, nil, "not KEY=VALUE"},
	}
	for _, tt := range tests {
		id, fields, err := parseJobUpdate(tt.args)
		if tt.problem != "" {
			if err == nil || !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("%q: error %v, want one mentioning %q", tt.args, err, tt.problem)
			}
			continue
		}
		if err != nil || id != tt.id || len(fields) != len(tt.fields) {
			t.Errorf("%q: got %d %v %v, want %d %v", tt.args, id, fields, err, tt.id, tt.fields)
			continue
		}
		for k, v := range tt.fields {
			if fields[k] != v {
				t.Errorf("%q: %s = %#v, want %#v", tt.args, k, fields[k], v)
			}
		}
	}
}

func TestScontrolJobIDs(t *testing.T) {
	ids, err := scontrolJobIDs([]string{"12,13", "14"})
	if err != nil || !equalIDs(ids, []uint32{12, 13, 14}) {
		t.Errorf("got %v %v", ids, err)
	}
	for _, bad := range [][]string{nil, {"0"}, {"12_3"}, {"abc"}} {
		if _, err := scontrolJobIDs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFirstHost(t *testing.T) {
	for in, want := range map[string]string{"h100-[3-4]": "h100-3", "h100-[7,9]": "h100-7", "a100-0": "a100-0", "a,b": "a"} {
		if got := firstHost(in); got != want {
			t.Errorf("firstHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseNodeUpdate(t *testing.T) {
	nodes, fields, isNode, err := parseNodeUpdate([]string{"NodeName=h100-[0-1],a100-3", "State=drain", "Reason=maint window"})
	if !isNode || err != nil {
		t.Fatalf("isNode %v err %v", isNode, err)
	}
	if strings.Join(nodes, " ") != "h100-0 h100-1 a100-3" || fields["reason"] != "maint window" || fields["state"].([]string)[0] != "DRAIN" {
		t.Errorf("nodes %q fields %v", nodes, fields)
	}
	// scontrol refuses a drain without a reason before sending anything.
	if _, _, _, err := parseNodeUpdate([]string{"NodeName=h100-0", "State=DRAIN"}); err == nil || !strings.Contains(err.Error(), "must specify a reason") {
		t.Errorf("drain without reason: %v", err)
	}
	if _, _, isNode, _ := parseNodeUpdate([]string{"JobId=5", "TimeLimit=10"}); isNode {
		t.Error("a job update was read as a node update")
	}
	if _, _, _, err := parseNodeUpdate([]string{"NodeName=h100-0", "Weight=5"}); err == nil {
		t.Error("Weight= was accepted")
	}
	if nodes, _, _, err := parseNodeUpdate([]string{"NodeName=n[01-03,7]x,m", "State=RESUME"}); err != nil || strings.Join(nodes, " ") != "n01x n02x n03x n7x m" {
		t.Errorf("NodeName=n[01-03,7]x,m names %q (%v)", nodes, err)
	}
	if _, _, _, err := parseNodeUpdate([]string{"NodeName=h100-[3-1]", "State=RESUME"}); err == nil {
		t.Error("a backwards range was accepted")
	}
}

// TestScontrolShowHostnames: the host list commands scripts use inside a job answer
// without a server, as scontrol does, from an argument or $SLURM_JOB_NODELIST.
func TestScontrolShowHostnames(t *testing.T) {
	t.Setenv("SLURM_JOB_NODELIST", "h100-[2,10],a100-0")
	for _, tc := range []struct {
		what, list, want string
		fails            bool
	}{
		{what: "hostnames", want: "h100-2\nh100-10\na100-0\n"},
		{what: "hostnames", list: "gpu-[01-03]", want: "gpu-01\ngpu-02\ngpu-03\n"},
		{what: "hostlist", list: "h100-1,h100-0,h100-3", want: "h100-[0-1,3]\n"},
		{what: "hostlist", list: "h100-1\nh100-2\n", want: "h100-[1-2]\n"},
		{what: "hostlistsorted", list: "b1,a1", want: "a1,b1\n"},
		{what: "hostnames", list: "h100-[3-1]", fails: true},
	} {
		var out strings.Builder
		ok, err := scontrolHosts(&out, tc.what, tc.list)
		if !ok || (err != nil) != tc.fails || out.String() != tc.want {
			t.Errorf("show %s %q: %q, %v (handled %v); want %q", tc.what, tc.list, out.String(), err, ok, tc.want)
		}
	}
	t.Setenv("SLURM_JOB_NODELIST", "")
	if _, err := scontrolHosts(io.Discard, "hostnames", ""); err == nil || !strings.Contains(err.Error(), "SLURM_JOB_NODELIST") {
		t.Errorf("no list and no SLURM_JOB_NODELIST: %v", err)
	}
	if ok, _ := scontrolHosts(io.Discard, "job", "5"); ok {
		t.Error("show job was taken for a host list")
	}
}
