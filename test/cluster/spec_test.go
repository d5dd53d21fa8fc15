package cluster

import (
	"reflect"
	"strings"
	"testing"
)

func TestLoadSpecExampleIsTheDefault(t *testing.T) {
	spec, err := LoadSpec("testdata/default-spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(spec, DefaultSpec()) {
		t.Errorf("testdata/default-spec.yaml = %+v, want DefaultSpec() %+v", spec, DefaultSpec())
	}
	if got := spec.NodeCount(); got != 6 {
		t.Errorf("NodeCount = %d, want 6", got)
	}
}

func TestParseSpec(t *testing.T) {
	const good = `
nodePools:
  - name: l4
    count: 2
    gpusPerNode: 1
    gpuModel: L4
    gpuMemoryMiB: 23034
    cpu: "16"
    memory: 64Gi
    labels: {zone: a}
    migMode: single
  - name: cpu
    count: 1
    cpu: "8"
    memory: 32Gi
`
	tests := []struct {
		name    string
		yaml    string
		wantErr []string // substrings, all required; none means valid
	}{
		{name: "valid", yaml: good},
		{name: "unknown field names its line", yaml: "nodePools:\n  - name: a\n    count: 1\n    gpus: 8\n", wantErr: []string{"line 4", "field gpus not found"}},
		{name: "unknown top-level field", yaml: "pools: []\n", wantErr: []string{"line 1", "field pools not found"}},
		{name: "empty document", yaml: "", wantErr: []string{"empty cluster spec"}},
		{name: "no pools", yaml: "nodePools: []\n", wantErr: []string{"at least one pool"}},
		{name: "bad pool name", yaml: "nodePools:\n  - {name: H100_pool, count: 1, cpu: '1', memory: 1Gi}\n", wantErr: []string{"nodePools[0] (H100_pool): name"}},
		{name: "duplicate pool", yaml: "nodePools:\n  - {name: a, count: 1, cpu: '1', memory: 1Gi}\n  - {name: a, count: 1, cpu: '1', memory: 1Gi}\n", wantErr: []string{"nodePools[1] (a): name: duplicate"}},
		{name: "zero count", yaml: "nodePools:\n  - {name: a, count: 0, cpu: '1', memory: 1Gi}\n", wantErr: []string{"count: must be at least 1"}},
		{name: "gpus without model and memory", yaml: "nodePools:\n  - {name: a, count: 1, gpusPerNode: 2, cpu: '1', memory: 1Gi}\n", wantErr: []string{"gpuModel: required", "gpuMemoryMiB: must be positive"}},
		{name: "bad quantities", yaml: "nodePools:\n  - {name: a, count: 1, cpu: lots, memory: '-1Gi'}\n", wantErr: []string{`cpu: "lots" is not a Kubernetes quantity`, "memory: must be positive"}},
		{name: "missing quantities", yaml: "nodePools:\n  - {name: a, count: 1}\n", wantErr: []string{"cpu: required", "memory: required"}},
		{name: "bad mig mode", yaml: "nodePools:\n  - {name: a, count: 1, cpu: '1', memory: 1Gi, migMode: all}\n", wantErr: []string{`migMode: must be none, single or mixed, got "all"`}},
		{name: "bad label", yaml: "nodePools:\n  - {name: a, count: 1, cpu: '1', memory: 1Gi, labels: {'a b': x}}\n", wantErr: []string{`labels: key "a b"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSpec([]byte(tt.yaml))
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error containing %q, got none", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}
