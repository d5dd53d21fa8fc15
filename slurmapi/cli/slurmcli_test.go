package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

func TestSlurmDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0:00"},
		{65 * time.Second, "1:05"},
		{3*time.Hour + 2*time.Minute + 1*time.Second, "3:02:01"},
		{49 * time.Hour, "2-01:00:00"},
	}
	for _, tt := range tests {
		if got := slurmDuration(tt.d); got != tt.want {
			t.Errorf("slurmDuration(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestSqueueDefaultLayout(t *testing.T) {
	now := time.Unix(1_700_000_100, 0)
	jobs := []client.Job{
		{JobID: 42, Name: "train-llama", UserName: "alice", Partition: "h100", JobState: []string{"RUNNING"},
			Nodes: "h100-[0-1]", NodeCount: client.Set(2), StartTime: client.Set(1_700_000_000)},
		{JobID: 43, Name: "eval", UserName: "bob", Partition: "a100", JobState: []string{"PENDING"},
			StateReason: "Resources", NodeCount: client.Set(1)},
		{JobID: 44, ArrayJobID: client.Set(44), ArrayTaskID: client.Set(3), Name: "sweep", UserName: "bob",
			Partition: "a100", JobState: []string{"PENDING"}, StateReason: "Priority", NodeCount: client.Set(1)},
		// An array's record with tasks 4-15 not started, three at a time.
		{JobID: 45, ArrayJobID: client.Set(45), ArrayTaskString: "4-15", ArrayMaxTasks: client.Set(3), Name: "sweep", UserName: "bob",
			Partition: "a100", JobState: []string{"PENDING"}, StateReason: "JobArrayTaskLimit", NodeCount: client.Set(1)},
	}
	var b strings.Builder
	if err := writeTable(&b, squeueDefaultFormat, squeueHeaders, false, len(jobs), func(r int, l byte) string {
		return squeueValue(jobs[r], l, now)
	}); err != nil {
		t.Fatal(err)
	}
	want := `             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
                42      h100 train-ll    alice  R       1:40      2 h100-[0-1]
                43      a100     eval      bob PD       0:00      1 (Resources)
              44_3      a100    sweep      bob PD       0:00      1 (Priority)
       45_[4-15%3]      a100    sweep      bob PD       0:00      1 (JobArrayTaskLimit)
`
	if b.String() != want {
		t.Errorf("squeue layout:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestSqueueFiltersFinishedJobsByDefault(t *testing.T) {
	jobs := []client.Job{
		{JobID: 1, JobState: []string{"RUNNING"}, UserName: "alice"},
		{JobID: 2, JobState: []string{"COMPLETED"}, UserName: "alice"},
		{JobID: 3, JobState: []string{"PENDING"}, UserName: "bob"},
	}
	ids := func(js []client.Job) (out []uint32) {
		for _, j := range js {
			out = append(out, j.JobID)
		}
		return out
	}
	tests := []struct {
		name string
		f    jobFilter
		want []uint32
	}{
		{"default: active only", jobFilter{}, []uint32{1, 3}},
		{"states by code", jobFilter{states: []string{"CD"}}, []uint32{2}},
		{"states by name, any case", jobFilter{states: []string{"pending"}}, []uint32{3}},
		{"user", jobFilter{users: []string{"alice"}}, []uint32{1}},
		{"all", jobFilter{all: true}, []uint32{1, 2, 3}},
	}
	for _, tt := range tests {
		if got := ids(filterJobs(jobs, tt.f)); !equalIDs(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func equalIDs(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSbatchCommandLineBecomesFields(t *testing.T) {
	opts, rest, _, err := sbatch.Parse([]string{"-p", "h100", "--gres=gpu:h100:8", "-N", "2", "--time=1:30:00", "--requeue", "train.sh"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 1 || rest[0] != "train.sh" {
		t.Fatalf("rest = %q", rest)
	}
	job, err := sbatchJob(opts, "#!/bin/bash\n#SBATCH --account=nlp\n", []string{"HOME=/home/alice", "SLURM_JWT=secret"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if job["partition"] != "h100" || job["nodes"] != "2" || job["tres_per_node"] != "gres/gpu:h100:8" || job["requeue"] != true {
		t.Errorf("fields = %v", job)
	}
	if tl, ok := job["time_limit"].(client.NoVal); !ok || tl.Number != 90 || !tl.Set {
		t.Errorf("time_limit = %#v, want 90 minutes", job["time_limit"])
	}
	if _, ok := job["account"]; ok {
		t.Errorf("account came from the command line although only the script sets it: %v", job["account"])
	}
	for _, kv := range job["environment"].([]string) {
		if strings.HasPrefix(kv, "SLURM_JWT=") {
			t.Errorf("the token was exported to the job's environment")
		}
	}
}

func TestExportedEnv(t *testing.T) {
	environ := []string{"HOME=/home/a", "SLURM_CONF=/etc/slurm", "FOO=1", "SLURM_JWT=t"}
	tests := []struct {
		export string
		want   []string
	}{
		{"", []string{"HOME=/home/a", "SLURM_CONF=/etc/slurm", "FOO=1"}},
		// sbatch(1): with ALL, the user's environment takes precedence
		// over a pair naming the same variable.
		{"ALL,BAR=2,FOO=9", []string{"HOME=/home/a", "SLURM_CONF=/etc/slurm", "FOO=1", "BAR=2", "SLURM_EXPORT_ENV=ALL,BAR=2,FOO=9"}},
		{"NONE", []string{"SLURM_CONF=/etc/slurm", "SLURM_EXPORT_ENV=NONE"}},
		{"FOO,BAR=2", []string{"SLURM_CONF=/etc/slurm", "FOO=1", "BAR=2", "SLURM_EXPORT_ENV=FOO,BAR=2"}},
		{"BAR=2", []string{"SLURM_CONF=/etc/slurm", "BAR=2", "SLURM_EXPORT_ENV=BAR=2"}},
	}
	for _, tt := range tests {
		if got := exportedEnv(tt.export, environ); strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("--export=%q: got %q, want %q", tt.export, got, tt.want)
		}
	}
}

func TestSinfoGroupsNodesByPartitionAndState(t *testing.T) {
	parts := []client.Partition{{Name: "h100", Flags: []string{"DEFAULT"}}, {Name: "a100"}}
	nodes := []client.Node{
		{Name: "h100-0", State: []string{"IDLE"}, Partitions: []string{"h100"}},
		{Name: "h100-1", State: []string{"IDLE"}, Partitions: []string{"h100"}},
		{Name: "h100-2", State: []string{"MIXED"}, Partitions: []string{"h100"}},
		{Name: "h100-3", State: []string{"IDLE", "DRAIN"}, Partitions: []string{"h100"}, Reason: "GPUXidError: XID 79"},
		{Name: "a100-0", State: []string{"ALLOCATED"}, Partitions: []string{"a100"}},
	}
	type row struct{ part, state, nodes string }
	var got []row
	for _, r := range sinfoRows(parts, nodes, false, false) {
		got = append(got, row{r.partition, r.state, sbatch.HostList(r.nodes)})
	}
	want := []row{
		{"h100*", "drain", "h100-3"},
		{"h100*", "idle", "h100-[0-1]"},
		{"h100*", "mix", "h100-2"},
		{"a100", "alloc", "a100-0"},
	}
	if len(got) != len(want) {
		t.Fatalf("rows = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestSinfoNoDefaultPartitionNoStar(t *testing.T) {
	parts := []client.Partition{{Name: "h100"}, {Name: "a100", Flags: []string{"ROOT_ONLY"}}}
	nodes := []client.Node{{Name: "h100-0", State: []string{"IDLE"}, Partitions: []string{"h100"}},
		{Name: "a100-0", State: []string{"IDLE"}, Partitions: []string{"a100"}}}
	for _, r := range sinfoRows(parts, nodes, false, false) {
		if strings.Contains(r.partition, "*") {
			t.Errorf("partition %q starred although none is the default", r.partition)
		}
	}
}

func TestNodeStates(t *testing.T) {
	tests := []struct {
		flags              []string
		long, short        string
		listedBySinfoDashR bool
	}{
		{[]string{"IDLE"}, "idle", "idle", false},
		{[]string{"MIXED"}, "mixed", "mix", false},
		{[]string{"ALLOCATED"}, "allocated", "alloc", false},
		{[]string{"IDLE", "DRAIN"}, "drained", "drain", true},
		{[]string{"MIXED", "DRAIN"}, "draining", "drng", true},
		{[]string{"ALLOCATED", "DRAIN"}, "draining", "drng", true},
		{[]string{"DOWN"}, "down", "down", true},
		{[]string{"DOWN", "DRAIN"}, "drained", "drain", true},
		{nil, "unknown", "unk", false},
	}
	for _, tt := range tests {
		if got := nodeState(tt.flags); got != tt.long {
			t.Errorf("%v: %%T %q, want %q", tt.flags, got, tt.long)
		}
		if got := nodeStateName(tt.flags); got != tt.short {
			t.Errorf("%v: %%t %q, want %q", tt.flags, got, tt.short)
		}
		if got := unavailable(tt.flags); got != tt.listedBySinfoDashR {
			t.Errorf("%v: listed by sinfo -R = %v, want %v", tt.flags, got, tt.listedBySinfoDashR)
		}
	}
}

func TestSinfoReasonsLayout(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	nodes := []client.Node{
		{Name: "h100-3", State: []string{"IDLE", "DRAIN"}, Partitions: []string{"h100"}, Reason: "GPUXidError: XID 79",
			ReasonSetUser: "remediation", ReasonChangedAt: client.Set(at.Unix())},
		{Name: "h100-4", State: []string{"IDLE", "DRAIN"}, Partitions: []string{"h100", "all"}, Reason: "GPUXidError: XID 79",
			ReasonSetUser: "remediation", ReasonChangedAt: client.Set(at.Unix())},
		{Name: "a100-1", State: []string{"DOWN"}, Partitions: []string{"a100"}, Reason: "NodeNotReady"},
	}
	rows := sinfoRows(nil, nodes, false, true)
	var b strings.Builder
	if err := writeTable(&b, sinfoReasonFormat, sinfoHeaders, false, len(rows), func(r int, l byte) string {
		return sinfoValue(rows[r], l)
	}); err != nil {
		t.Fatal(err)
	}
	want := "REASON               USER      TIMESTAMP           NODELIST\n" +
		"NodeNotReady         Unknown   Unknown             a100-1\n" +
		"GPUXidError: XID 79  remediati " + at.Format("2006-01-02T15:04:05") + " h100-[3-4]\n"
	if b.String() != want {
		t.Errorf("sinfo -R:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestSbatchPrintsEachWarningOnce: the server's warnings about #SBATCH
// directives reach stderr as sbatch prints them, and one the command line's
// parse already printed is not printed again.
func TestSbatchPrintsEachWarningOnce(t *testing.T) {
	mailWarning := "--mail-type is accepted but has no effect in Sluice (ignored: no mail is sent)"
	for _, tc := range []struct {
		name           string
		args           []string // the sbatch command line
		serverWarnings []string // what the server's answer carries
		want           string   // stderr
	}{
		{"no ignored directives", []string{"train.sh"}, nil, ""},
		{"directive in the script", []string{"train.sh"}, []string{mailWarning}, "sbatch: warning: " + mailWarning + "\n"},
		{"on the command line and in the script", []string{"--mail-type=END", "train.sh"}, []string{mailWarning}, "sbatch: warning: " + mailWarning + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != "POST" || r.URL.Path != "/slurm/"+client.Version+"/job/submit" {
					http.NotFound(w, r)
					return
				}
				warnings := []any{}
				for _, d := range tc.serverWarnings {
					warnings = append(warnings, map[string]any{"description": d, "source": "sluice"})
				}
				json.NewEncoder(w).Encode(map[string]any{"job_id": 7, "warnings": warnings, "errors": []any{}})
			}))
			defer srv.Close()
			_, _, cliWarnings, err := sbatch.Parse(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			printed := printWarnings(&stderr, cliWarnings, nil)
			c := &client.Client{URL: srv.URL, HTTP: srv.Client()}
			id, err := submitBatch(context.Background(), c, map[string]any{"script": "#!/bin/sh\n"}, printed, &stderr)
			if err != nil || id != 7 {
				t.Fatalf("submit: %d %v", id, err)
			}
			if stderr.String() != tc.want {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.want)
			}
		})
	}
}

// TestSbatchForwardsWhatSlurmDoes: --mem-per-gpu and --priority become
// their REST fields; --wrap makes sbatch's wrapper script and refuses
// script arguments, as sbatch does.
func TestSbatchForwardsWhatSlurmDoes(t *testing.T) {
	opts, _, _, err := sbatch.Parse([]string{"--gpus-per-node=2", "--mem-per-gpu=20G", "--priority=7", "--open-mode=a", "--wrap=hostname"})
	if err != nil {
		t.Fatal(err)
	}
	job, err := sbatchJob(opts, "#!/bin/sh\n", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if job["memory_per_tres"] != "gres/gpu=20480" {
		t.Errorf("memory_per_tres = %v, want gres/gpu=20480", job["memory_per_tres"])
	}
	if p, ok := job["priority"].(client.NoVal); !ok || p.Number != 7 {
		t.Errorf("priority = %#v", job["priority"])
	}
	if m, ok := job["open_mode"].([]string); !ok || !slices.Equal(m, []string{"APPEND"}) {
		t.Errorf("open_mode = %#v, want [APPEND] (a requeued job's log is appended to)", job["open_mode"])
	}
	host, _ := os.Hostname()
	if env := job["environment"].([]string); !slices.Contains(env, "SLURM_SUBMIT_HOST="+host) {
		t.Errorf("environment %q lacks SLURM_SUBMIT_HOST=%s, the host sbatch ran on", env, host)
	}
	script, err := batchScript(opts, nil)
	if err != nil || script != "#!/bin/sh\n# This script was created by sbatch --wrap.\n\nhostname\n" {
		t.Errorf("wrapped script %q (%v)", script, err)
	}
	if _, err := batchScript(opts, []string{"extra"}); err == nil {
		t.Error("--wrap with script arguments was accepted")
	}
}

func TestValidJobRef(t *testing.T) {
	for ref, want := range map[string]bool{"123": true, "123_4": true, "123_": false, "_4": false, "12x": false, "123_4_5": false,
		"123.0": true, "123.": false, "123.batch": false, "123_4.1": false, "123.1.2": false} {
		if got := validJobRef(ref); got != want {
			t.Errorf("validJobRef(%q) = %v, want %v", ref, got, want)
		}
	}
}
