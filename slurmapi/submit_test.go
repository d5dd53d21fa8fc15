package slurmapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// testCatalog is the site `sluice dev` seeds: partitions h100 and a100,
// accounts research -> nlp, vision, plus default; QOS normal, preemptible,
// high; alice in nlp (normal, preemptible), bob in vision (also high, and
// preemptible by default), dave in default (no QOS list: any, normal by
// default).
func testCatalog() *Catalog {
	return &Catalog{
		Partitions: map[string]*Partition{
			"h100": {Name: "h100", GPUType: "H100-80GB", GPUs: 16, DefaultTime: time.Hour, MaxTime: 48 * time.Hour, DefaultImage: "nvcr.io/nvidia/pytorch:24.05-py3", MaxNodesPerJob: 4},
			"a100": {Name: "a100", GPUType: "NVIDIA-A100-SXM4-40GB", GPUs: 16, AllowAccounts: []string{"vision"}},
		},
		DefaultPartition: "h100",
		Accounts: map[string]*Account{
			"research": {Name: "research"}, "nlp": {Name: "nlp", Parent: "research"},
			"vision": {Name: "vision", Parent: "research"}, "default": {Name: "default"},
		},
		QOS: map[string]*QOS{
			"normal":      {Name: "normal", MaxTRESPerUser: "gres/gpu=16"},
			"preemptible": {Name: "preemptible"},
			"high":        {Name: "high", MaxWall: 4 * time.Hour},
		},
		UserAccounts:   map[string][]string{"alice": {"nlp"}, "bob": {"vision"}, "dave": {"default"}},
		DefaultAccount: map[string]string{"alice": "nlp", "bob": "vision", "dave": "default"},
		AccountQOS:     map[string][]string{"nlp": {"normal", "preemptible"}, "vision": {"normal", "preemptible", "high"}},
		DefaultQOS:     map[string]string{"nlp": "normal", "vision": "preemptible"},
	}
}

const script = "#!/bin/bash\nsrun python train.py\n"

func body(job map[string]any, scriptText string) []byte {
	b, _ := json.Marshal(map[string]any{"script": scriptText, "job": job})
	return b
}

func TestDecodeSubmissionAccepts(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		body  []byte
		user  string
		check func(d *JobDesc) bool
	}{
		{"defaults from catalog", body(map[string]any{"environment": []string{"PATH=/bin"}}, script), "alice", func(d *JobDesc) bool {
			return d.Partition == "h100" && d.Account == "nlp" && d.QOS == "normal" && d.TimeLimit == time.Hour &&
				d.Nodes == 1 && d.Tasks == 1 && d.CPUsPerTask == 1 && d.Name == "sbatch" && d.ContainerImage != ""
		}},
		{"2 nodes x 8 h100 GPUs", body(map[string]any{"partition": "h100", "tres_per_node": "gres/gpu:h100:8", "minimum_nodes": 2, "tasks_per_node": 8}, script), "alice", func(d *JobDesc) bool {
			return d.Nodes == 2 && d.GPUs.PerNode == 8 && d.GPUs.Type == "h100" && d.Tasks == 16
		}},
		{"no-value structs", body(map[string]any{"time_limit": map[string]any{"set": true, "infinite": false, "number": 90}, "minimum_nodes": map[string]any{"set": true, "number": 2}}, script), "alice", func(d *JobDesc) bool {
			return d.TimeLimit == 90*time.Minute && d.Nodes == 2
		}},
		{"directives fill unset fields", body(map[string]any{}, "#!/bin/bash\n#SBATCH -J train -N 2 --gpus-per-node=h100:4 -t 2:00:00\n#SBATCH --requeue --array=0-3%2 -d afterok:7\nsrun x\n"), "alice", func(d *JobDesc) bool {
			return d.Name == "train" && d.Nodes == 2 && d.GPUs.PerNode == 4 && d.TimeLimit == 2*time.Hour && d.Requeue && d.Array == "0-3%2" && d.Dependency == "afterok:7"
		}},
		{"explicit fields win over directives", body(map[string]any{"name": "rest", "time_limit": 30, "tres_per_node": "gres/gpu:1"}, "#!/bin/bash\n#SBATCH -J directive -t 2:00:00 --gres=gpu:8\n"), "alice", func(d *JobDesc) bool {
			return d.Name == "rest" && d.TimeLimit == 30*time.Minute && d.GPUs.PerNode == 1
		}},
		{"gpus per task and per job", body(map[string]any{"tres_per_task": "gres/gpu=1", "tasks": 4}, script), "alice", func(d *JobDesc) bool {
			return d.GPUs.PerTask == 1 && d.GPUs.Total(d.Nodes, d.Tasks) == 4
		}},
		{"shard is a fraction", body(map[string]any{"tres_per_node": "gres/shard:2"}, script), "alice", func(d *JobDesc) bool {
			return d.GPUs.Fraction == 0.25 && d.GPUs.Shards == 2
		}},
		{"mps percent is a fraction", body(map[string]any{}, "#!/bin/sh\n#SBATCH --gres=mps:50\n"), "alice", func(d *JobDesc) bool {
			return d.GPUs.Fraction == 0.5
		}},
		{"pyxis image from environment", body(map[string]any{"environment": []string{containerImageEnv + "=ubuntu:24.04"}}, script), "alice", func(d *JobDesc) bool {
			return d.ContainerImage == "ubuntu:24.04"
		}},
		{"pyxis image directive", body(map[string]any{}, "#!/bin/sh\n#SBATCH --container-image=alpine\n"), "alice", func(d *JobDesc) bool {
			return d.ContainerImage == "alpine"
		}},
		{"environment object form", body(map[string]any{"environment": map[string]string{"B": "2", "A": "1"}}, script), "alice", func(d *JobDesc) bool {
			return strings.Join(d.Environment, " ") == "A=1 B=2"
		}},
		{"begin directive relative to now", body(map[string]any{}, "#!/bin/sh\n#SBATCH --begin=now+1hour\n"), "alice", func(d *JobDesc) bool {
			return d.BeginTime.Equal(now.Add(time.Hour))
		}},
		{"the association's default QOS", body(map[string]any{"partition": "a100"}, script), "bob", func(d *JobDesc) bool {
			return d.Account == "vision" && d.QOS == "preemptible"
		}},
		{"no QOS list: any QOS, normal by default", body(map[string]any{}, script), "dave", func(d *JobDesc) bool {
			return d.Account == "default" && d.QOS == "normal"
		}},
		{"a QOS of the association", body(map[string]any{"qos": "preemptible"}, script), "alice", func(d *JobDesc) bool {
			return d.QOS == "preemptible"
		}},
		{"script inside job", []byte(`{"job":{"script":"#!/bin/sh\necho","account":"vision","partition":"a100","qos":"preemptible"}}`), "bob", func(d *JobDesc) bool {
			return d.Account == "vision" && d.Partition == "a100" && d.QOS == "preemptible"
		}},
		{"placement directives", body(map[string]any{}, "#!/bin/sh\n#SBATCH -C ib&h100 -w n[1-2] -x n3 --exclusive --switches=1\n"), "alice", func(d *JobDesc) bool {
			return d.Constraint == "ib&h100" && strings.Join(d.NodeList, ",") == "n1,n2" && strings.Join(d.Exclude, ",") == "n3" &&
				d.Exclusive && d.Switches == 1 && d.Nodes == 2
		}},
		{"partition list", body(map[string]any{}, "#!/bin/sh\n#SBATCH -p a100,h100 -C [r1|r2]\n"), "bob", func(d *JobDesc) bool {
			return d.Partition == "a100,h100" && d.Constraint == "[r1|r2]" && d.ContainerImage == "" && strings.Join(d.Partitions(), " ") == "a100 h100"
		}},
		{"placement fields win", body(map[string]any{"constraints": "a100", "required_nodes": []string{"m1"}, "excluded_nodes": "m2,m3",
			"shared": []string{"none"}, "required_switches": 2, "wait_for_switch": 600}, "#!/bin/sh\n#SBATCH -C ib -w n1 --switches=1@1:00\n"), "alice", func(d *JobDesc) bool {
			return d.Constraint == "a100" && strings.Join(d.NodeList, ",") == "m1" && strings.Join(d.Exclude, ",") == "m2,m3" && d.Exclusive && d.Switches == 2 &&
				d.SwitchWait == 10*time.Minute
		}},
		{"--signal directive", body(map[string]any{}, "#!/bin/sh\n#SBATCH --signal=B:SIGUSR1@90\n"), "alice", func(d *JobDesc) bool {
			return d.Signal == "B:10@90"
		}},
		{"--signal default time", body(map[string]any{}, "#!/bin/sh\n#SBATCH --signal=12\n"), "alice", func(d *JobDesc) bool {
			return d.Signal == "12@60"
		}},
		{"kill_warning fields win part by part", body(map[string]any{"kill_warning_signal": "USR2", "kill_warning_delay": 300,
			"kill_warning_flags": []string{"BATCH_JOB", "RESERVATION_JOB"}}, "#!/bin/sh\n#SBATCH --signal=10@90\n"), "alice", func(d *JobDesc) bool {
			return d.Signal == "RB:12@300"
		}},
		{"kill_warning_delay over the directive's signal", body(map[string]any{"kill_warning_delay": 30}, "#!/bin/sh\n#SBATCH --signal=B:10\n"), "alice", func(d *JobDesc) bool {
			return d.Signal == "B:10@30"
		}},
	}
	for _, tc := range cases {
		d, _, err := DecodeSubmission(tc.body, tc.user, testCatalog(), SubmitPolicy{ShardsPerGPU: 8}, now)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !tc.check(d) {
			t.Errorf("%s: unexpected %+v", tc.name, d)
		}
	}
}

func TestDecodeSubmissionRejects(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		user   string
		number int
		want   string
	}{
		{"malformed JSON", `{"job":`, "alice", ErrRestFailParsing, "malformed JSON"},
		{"feature counts", `{"script":"#!/bin/sh\n#SBATCH -C [a*2&b*4]\n","job":{}}`, "alice", ErrRestInvalidJobs, "node counts per feature (a*2) are not supported"},
		{"partition list with a closed partition", `{"script":"#!/bin/sh\n","job":{"partition":"h100,a100"}}`, "alice", ErrInvalidAccount, "partition \"a100\" does not allow account"},
		{"partition listed twice", `{"script":"#!/bin/sh\n#SBATCH -p h100,h100\n","job":{}}`, "alice", ErrInvalidPartition, "names h100 twice"},
		{"unknown partition in a list", `{"script":"#!/bin/sh\n","job":{"partition":"h100,v100"}}`, "alice", ErrInvalidPartition, "\"v100\" does not exist"},
		{"bad constraint field", `{"script":"#!/bin/sh\n","job":{"constraints":"a b"}}`, "alice", ErrRestInvalidJobs, "not a feature"},
		{"required and excluded", `{"script":"#!/bin/sh\n","job":{"required_nodes":["n1"],"excluded_nodes":["n1"]}}`, "alice", ErrInvalidNodeName, "both required and excluded"},
		{"more nodes than listed", `{"script":"#!/bin/sh\n","job":{"required_nodes":["n1"],"minimum_nodes":2}}`, "alice", ErrNotSupported, "list every node"},
		{"shared user", `{"script":"#!/bin/sh\n","job":{"shared":["user"]}}`, "alice", ErrNotSupported, "shared \"user\""},
		{"wrong type", `{"script":"#!/bin/sh","job":{"name":5}}`, "alice", ErrRestFailParsing, "job.name"},
		{"no job", `{"script":"#!/bin/sh\n"}`, "alice", ErrRestInvalidJobs, "no \"job\""},
		{"hetjob", `{"jobs":[{},{}]}`, "alice", ErrNotSupported, "heterogeneous"},
		{"no script", `{"job":{}}`, "alice", ErrScriptMissing, "script is required"},
		{"no shebang", `{"script":"echo hi","job":{}}`, "alice", ErrScriptMissing, "shebang"},
		{"bad directive", `{"script":"#!/bin/sh\n#SBATCH --nodes=zero\n","job":{}}`, "alice", ErrRestInvalidJobs, "invalid node count"},
		{"unknown partition", `{"script":"#!/bin/sh\n","job":{"partition":"v100"}}`, "alice", ErrInvalidPartition, "\"v100\" does not exist"},
		{"unknown account", `{"script":"#!/bin/sh\n","job":{"account":"physics"}}`, "alice", ErrInvalidAccount, "does not exist"},
		{"user not in account", `{"script":"#!/bin/sh\n","job":{"account":"vision"}}`, "alice", ErrInvalidAccount, "not associated"},
		{"no default account", `{"script":"#!/bin/sh\n","job":{}}`, "mallory", ErrInvalidAccount, "no default account"},
		{"partition refuses account", `{"script":"#!/bin/sh\n","job":{"partition":"a100"}}`, "alice", ErrInvalidAccount, "does not allow account"},
		{"unknown QOS", `{"script":"#!/bin/sh\n","job":{"qos":"turbo"}}`, "alice", ErrInvalidQOS, "does not exist"},
		{"QOS outside the association", `{"script":"#!/bin/sh\n","job":{"qos":"high"}}`, "alice", ErrInvalidQOS, "may not use"},
		{"account without users is closed", `{"script":"#!/bin/sh\n","job":{"account":"default"}}`, "alice", ErrInvalidAccount, "not associated"},
		{"GPU type mismatch", `{"script":"#!/bin/sh\n","job":{"partition":"h100","tres_per_node":"gres/gpu:a100:2"}}`, "alice", ErrInvalidGRES, "has H100-80GB GPUs"},
		{"over QOS GPU limit", `{"script":"#!/bin/sh\n","job":{"tres_per_node":"gres/gpu:8","minimum_nodes":3}}`, "alice", ErrAccountingPolicy, "allows 16"},
		{"over QOS MaxWall", `{"script":"#!/bin/sh\n","job":{"qos":"high","time_limit":600}}`, "bob", ErrAccountingPolicy, "MaxWall"},
		{"over partition MaxTime", `{"script":"#!/bin/sh\n","job":{"time_limit":4000}}`, "alice", ErrInvalidTimeLimit, "exceeds partition"},
		{"too many nodes", `{"script":"#!/bin/sh\n","job":{"minimum_nodes":5}}`, "alice", ErrInvalidNodeCount, "at most 4"},
		{"zero tasks", `{"script":"#!/bin/sh\n","job":{"tasks":0}}`, "alice", ErrRestInvalidJobs, "between 1"},
		{"fewer tasks than nodes", `{"script":"#!/bin/sh\n","job":{"tasks":1,"minimum_nodes":2}}`, "alice", ErrBadTaskCount, "at least one task per node"},
		{"unknown gres", `{"script":"#!/bin/sh\n","job":{"tres_per_node":"gres/nic:1"}}`, "alice", ErrInvalidGRES, "unknown generic resource"},
		{"gpus per node and per task", `{"script":"#!/bin/sh\n#SBATCH --gpus-per-node=2 --gpus-per-task=1\n","job":{}}`, "alice", ErrInvalidGRES, "use one of them"},
		{"shard larger than a GPU", `{"script":"#!/bin/sh\n","job":{"tres_per_node":"gres/shard:9"}}`, "alice", ErrInvalidGRES, "more than one GPU"},
		{"shared GPU on two nodes", `{"script":"#!/bin/sh\n","job":{"tres_per_node":"gres/mps:30","minimum_nodes":2}}`, "alice", ErrInvalidGRES, "single-node"},
		{"two memory kinds", `{"script":"#!/bin/sh\n","job":{"memory_per_node":1024,"memory_per_cpu":10}}`, "alice", ErrRestInvalidJobs, "only one"},
		{"bad dependency", `{"script":"#!/bin/sh\n","job":{"dependency":"afterok:x"}}`, "alice", ErrDependency, "not a job id"},
		{"array over MaxArraySize", `{"script":"#!/bin/sh\n","job":{"array":"0-99999"}}`, "alice", ErrInvalidArray, "below MaxArraySize 1001"},
		{"bad array", `{"script":"#!/bin/sh\n","job":{"array":"1-"}}`, "alice", ErrInvalidArray, "invalid array"},
		{"bad environment", `{"script":"#!/bin/sh\n","job":{"environment":["NOEQUALS"]}}`, "alice", ErrRestFailParsing, "NAME=value"},
		{"bad nodes range", `{"script":"#!/bin/sh\n","job":{"nodes":"4-2"}}`, "alice", ErrInvalidNodeCount, "MIN-MAX"},
		{"bad --signal flag", `{"script":"#!/bin/sh\n#SBATCH --signal=X:10@60\n","job":{}}`, "alice", ErrRestInvalidJobs, "invalid flag"},
		{"bad --signal name", `{"script":"#!/bin/sh\n#SBATCH --signal=NOPE@60\n","job":{}}`, "alice", ErrRestInvalidJobs, "unknown signal"},
		{"bad --signal time", `{"script":"#!/bin/sh\n#SBATCH --signal=10@70000\n","job":{}}`, "alice", ErrRestInvalidJobs, "0-65535"},
		{"bad kill_warning_signal", `{"script":"#!/bin/sh\n","job":{"kill_warning_signal":"99"}}`, "alice", ErrRestInvalidJobs, "not 1-64"},
		{"kill_warning_delay without a signal", `{"script":"#!/bin/sh\n","job":{"kill_warning_delay":30}}`, "alice", ErrRestInvalidJobs, "need a kill_warning_signal"},
		{"negative kill_warning_delay", `{"script":"#!/bin/sh\n","job":{"kill_warning_signal":"USR1","kill_warning_delay":-1}}`, "alice", ErrRestInvalidJobs, "0-65535"},
		{"unsupported kill_warning_flags", `{"script":"#!/bin/sh\n","job":{"kill_warning_signal":"USR1","kill_warning_flags":["FULL_JOB"]}}`, "alice", ErrNotSupported, "not supported"},
		{"fractional count", `{"script":"#!/bin/sh\n","job":{"tasks":1.5}}`, "alice", ErrRestFailParsing, "whole number"},
	}
	for _, tc := range cases {
		_, _, err := DecodeSubmission([]byte(tc.body), tc.user, testCatalog(), SubmitPolicy{ShardsPerGPU: 8}, time.Now())
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if err.Status != http.StatusBadRequest || err.Number != tc.number || !strings.Contains(err.Description, tc.want) {
			t.Errorf("%s: got %d/%d %q, want 400/%d containing %q", tc.name, err.Status, err.Number, err.Description, tc.number, tc.want)
		}
		if err.Short == "" || err.Source == "" {
			t.Errorf("%s: error entry lacks short text or source: %+v", tc.name, err)
		}
	}
}

func FuzzDecodeSubmission(f *testing.F) {
	f.Add([]byte(`{"script":"#!/bin/sh\n#SBATCH -N2 --gres=gpu:h100:8\n","job":{"partition":"h100","time_limit":{"set":true,"number":60}}}`))
	f.Add([]byte(`{"job":{"script":"#!/bin/sh","tres_per_node":"gres/shard:2","environment":{"A":"1"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, _, err := DecodeSubmission(b, "alice", testCatalog(), SubmitPolicy{ShardsPerGPU: 8}, time.Now())
		if err != nil {
			if err.Status < 400 || err.Status > 499 || err.Number == 0 {
				t.Fatalf("bad input answered %d/%d, want a 4xx Slurm error", err.Status, err.Number)
			}
			return
		}
		// What is accepted is complete and within the catalogue.
		if d.Partition == "" || d.Account == "" || d.Nodes < 1 || d.Tasks < d.Nodes || d.CPUsPerTask < 1 {
			t.Fatalf("accepted an incomplete job: %+v", d)
		}
		if d.TimeLimit == sbatch.Unlimited && d.Partition == "h100" {
			t.Fatalf("accepted an unlimited time on h100, which has a maximum")
		}
	})
}

func TestGPUTypeMatches(t *testing.T) {
	cases := []struct {
		req, model string
		want       bool
	}{
		{"h100", "H100-80GB", true}, {"H100", "h100", true}, {"a100", "NVIDIA-A100-SXM4-40GB", true},
		{"h100", "GH100", false}, {"a100", "H100-80GB", false}, {"80GB", "H100-80GB", true},
	}
	for _, tc := range cases {
		if got := gpuTypeMatches(tc.req, tc.model); got != tc.want {
			t.Errorf("%s vs %s: got %v", tc.req, tc.model, got)
		}
	}
}
