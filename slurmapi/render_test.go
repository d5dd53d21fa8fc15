package slurmapi

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi/openapi"
	"github.com/sluicehq/sluice/slurmapi/openapi/openapitest"
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

var t0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func sampleJobs() []Job {
	task := 3
	return []Job{
		{ID: 101, State: []string{"PENDING"}, Reason: "Resources", SubmitTime: t0, Priority: 100, CPUs: 32,
			TRESReq: "cpu=32,mem=128G,node=2,billing=32,gres/gpu=16",
			Desc: JobDesc{Name: "train", User: "alice", Account: "nlp", Partition: "h100", QOS: "normal", Nodes: 2, Tasks: 16,
				TasksPerNode: 8, CPUsPerTask: 2, MemoryPerNode: 65536, GPUs: GPURequest{Type: "h100", PerNode: 8},
				TimeLimit: 2 * time.Hour, Dependency: "afterok:100", Array: "0-7%2", BeginTime: t0.Add(time.Hour)}},
		{ID: 102, ArrayJobID: 101, ArrayTaskID: &task, State: []string{"RUNNING"}, Reason: "None", SubmitTime: t0, StartTime: t0.Add(time.Minute),
			NodeList: "gpu-[1-2]", NodeNames: []string{"gpu-1", "gpu-2"}, CPUs: 32, TRESAlloc: "cpu=32,node=2,gres/gpu=16",
			Desc: JobDesc{Name: "train", User: "alice", Account: "nlp", Partition: "h100", Nodes: 2, Tasks: 2, CPUsPerTask: 1,
				GPUs: GPURequest{PerTask: 1}, TimeLimit: sbatch.Unlimited, MemoryPerGPU: 8192}},
		{ID: 103, State: []string{"FAILED"}, Reason: "NonZeroExitCode", SubmitTime: t0, StartTime: t0, EndTime: t0.Add(time.Minute), ExitCode: 3,
			Desc: JobDesc{Name: "eval", User: "bob", Account: "vision", Partition: "a100", Nodes: 1, Tasks: 1, CPUsPerTask: 1, GPUs: GPURequest{Fraction: 0.25, Shards: 2}}},
		{ID: 104, State: []string{"CANCELLED"}, SubmitTime: t0, EndTime: t0, Signal: 9, Manifest: true,
			Desc: JobDesc{Name: "default/pytorchjob-x", User: "system:serviceaccount:default:ml", Account: "default", Nodes: 1, Tasks: 1, CPUsPerTask: 1, GPUs: GPURequest{Fraction: 0.5}}},
	}
}

// renderCase is one response rendered by the server's own write path.
type renderCase struct {
	method, key, concrete string // key as in routes; concrete path below the version
	payload               func() map[string]any
	check                 func(t *testing.T, version string, doc map[string]any)
}

func renderCases() []renderCase {
	nodes := []Node{
		{Name: "gpu-1", State: []string{"MIXED"}, CPUs: 64, AllocCPUs: 16, MemoryMiB: 512000, AllocMiB: 1000, GRES: "gpu:h100:8", GRESUsed: "gpu:h100:2(IDX:0-1)", Partitions: []string{"h100"}, BootTime: t0},
		{Name: "gpu-2", State: []string{"IDLE", "DRAIN"}, Reason: "XID 79: GPU fell off the bus", ReasonUser: "sluice", ReasonTime: t0, CPUs: 64, GRES: "gpu:h100:8"},
	}
	parts := []Partition{
		{Name: "h100", Nodes: "gpu-[1-2]", NodeCount: 2, CPUs: 128, GPUType: "h100", GPUs: 16, DefaultTime: time.Hour, MaxTime: 48 * time.Hour, Default: true, MaxNodesPerJob: 4},
		{Name: "a100", NodeCount: 0, AllowAccounts: []string{"vision"}, AllowQOS: []string{"normal"}},
	}
	shares := []Share{
		{ID: 1, Cluster: "sluice", Name: "research", Shares: 10, SharesNorm: 0.9, RawUsage: 3600, EffectiveUsage: 0.5, FairshareFactor: 0.6, FairshareLevel: 1.2},
		{ID: 2, Cluster: "sluice", Name: "alice", Parent: "nlp", User: true, Shares: 1, SharesNorm: 0.5, FairshareFactor: 0.7},
	}
	return []renderCase{
		{"GET", "slurm/jobs", "/slurm/%s/jobs", func() map[string]any { return renderJobs(sampleJobs(), "sluice", t0) },
			func(t *testing.T, v string, doc map[string]any) {
				jobs := doc["jobs"].([]any)
				first := jobs[0].(map[string]any)
				if first["job_id"].(float64) != 101 || first["tres_per_node"] != "gres/gpu:h100:8" || first["state_reason"] != "Resources" {
					t.Errorf("%s: job 101 rendered as %v", v, first)
				}
				tl := first["time_limit"].(map[string]any)
				if tl["number"].(float64) != 120 || tl["set"] != true {
					t.Errorf("%s: time_limit %v, want 120 minutes", v, tl)
				}
				if inf := jobs[1].(map[string]any)["time_limit"].(map[string]any); inf["infinite"] != true {
					t.Errorf("%s: unlimited time rendered as %v", v, inf)
				}
				ec := jobs[2].(map[string]any)["exit_code"].(map[string]any)
				if ec["return_code"].(map[string]any)["number"].(float64) != 3 || ec["status"].([]any)[0] != "ERROR" {
					t.Errorf("%s: exit code %v", v, ec)
				}
			}},
		{"GET", "slurm/job/{job_id}", "/slurm/%s/job/101", func() map[string]any { return renderJobs(sampleJobs()[:1], "sluice", t0) }, nil},
		{"GET", "slurm/nodes", "/slurm/%s/nodes", func() map[string]any { return renderNodes(nodes, "sluice", t0) },
			func(t *testing.T, v string, doc map[string]any) {
				n := doc["nodes"].([]any)[1].(map[string]any)
				if n["reason"] != "XID 79: GPU fell off the bus" || n["state"].([]any)[1] != "DRAIN" || n["gres"] != "gpu:h100:8" {
					t.Errorf("%s: node %v", v, n)
				}
			}},
		{"GET", "slurm/partitions", "/slurm/%s/partitions", func() map[string]any { return renderPartitions(parts, "sluice", t0) },
			func(t *testing.T, v string, doc map[string]any) {
				p := doc["partitions"].([]any)[0].(map[string]any)
				if !strings.Contains(p["tres"].(map[string]any)["configured"].(string), "gres/gpu=16") {
					t.Errorf("%s: partition %v", v, p)
				}
			}},
		{"GET", "slurm/shares", "/slurm/%s/shares", func() map[string]any { return renderShares(shares) }, nil},
		{"DELETE", "slurm/job/{job_id}", "/slurm/%s/job/101", func() map[string]any {
			return map[string]any{"status": []any{killStatus(101, nil)}}
		}, nil},
		{"DELETE", "slurm/jobs", "/slurm/%s/jobs", func() map[string]any {
			return map[string]any{"status": []any{killStatus(101, nil), killStatus(102, BadRequest(ErrAlreadyDone, "jobs", "job 102 already finished"))}}
		}, nil},
		{"GET", "slurmdb/jobs", "/slurmdb/%s/jobs", func() map[string]any {
			jobs := sampleJobs()
			list := []any{}
			for i := range jobs {
				list = append(list, renderDBJob(&jobs[i], "sluice"))
			}
			return map[string]any{"jobs": list}
		}, nil},
		{"GET", "slurmdb/accounts", "/slurmdb/%s/accounts", func() map[string]any {
			return map[string]any{"accounts": []any{renderAccount(&Account{Name: "nlp", Description: "NLP", Organization: "research", Parent: "research", Coordinators: []string{"carol"}})}}
		}, nil},
		{"GET", "slurmdb/associations", "/slurmdb/%s/associations", func() map[string]any {
			return map[string]any{"associations": []any{renderAssoc(&Association{ID: 1, Cluster: "sluice", Account: "nlp", User: "alice", QOS: []string{"normal", "high"}, DefaultQOS: "normal", Shares: 1, IsDefault: true}, 50)}}
		}, nil},
		{"GET", "slurmdb/qos", "/slurmdb/%s/qos", func() map[string]any {
			return map[string]any{"qos": []any{
				renderQOS(&QOS{ID: 1, Name: "high", Priority: 1000, PreemptMode: "REQUEUE", UsageFactor: 2, MaxWall: 4 * time.Hour, MaxJobsPerUser: 10, MaxTRESPerUser: "gres/gpu=16", GrpTRES: "gres/gpu=64"}),
				renderQOS(&QOS{ID: 2, Name: "normal"}),
			}}
		}, nil},
		{"GET", "slurmdb/users", "/slurmdb/%s/users", func() map[string]any {
			return map[string]any{"users": []any{renderUser(&User{Name: "alice", DefaultAccount: "nlp", AdminLevel: "None", Coordinates: []string{"nlp"}, Associations: []Association{{ID: 1, Account: "nlp"}}}, "sluice")}}
		}, nil},
		{"GET", "slurmdb/tres", "/slurmdb/%s/tres", func() map[string]any {
			return map[string]any{"TRES": renderTRES([]TRES{{1, "cpu", ""}, {4, "gres", "gpu"}})}
		}, nil},
		{"GET", "slurmdb/clusters", "/slurmdb/%s/clusters", func() map[string]any {
			return map[string]any{"clusters": []any{renderCluster(Cluster{Name: "sluice", Controller: "ctl", Port: DefaultPort})}}
		}, nil},
	}
}

// TestRenderedResponsesValidateInEveryVersion renders each payload through
// the server's write path for every version and validates it against
// that version's official document.
func TestRenderedResponsesValidateInEveryVersion(t *testing.T) {
	srv, err := NewServer(Config{Auth: *testAuth()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range openapi.Versions {
		spec := srv.specs[v]
		for _, rc := range renderCases() {
			shape := spec.Response(rc.method, rc.key)
			if shape == nil {
				t.Errorf("%s: no %s %s", v, rc.method, rc.key)
				continue
			}
			path := strings.Replace(rc.concrete, "%s", v, 1)
			req := httptest.NewRequest(rc.method, path, nil)
			rec := httptest.NewRecorder()
			srv.write(rec, req, spec, shape, &call{}, rc.payload(), nil)
			openapitest.Check(t, rc.method, path, rec.Code, rec.Body.Bytes())
			if rc.check != nil {
				var doc map[string]any
				json.Unmarshal(rec.Body.Bytes(), &doc)
				rc.check(t, v, doc)
			}
		}
	}
}
