package slurmapi

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/store"
)

// sshare over a real ledger: alice (nlp) held 2 GPUs for 10 h, bob (vision)
// half a GPU for 4 h, dave (vision) nothing; nlp and vision have one share
// each under research. Without decay: nlp used 72000 of 79200 GPU-seconds,
// so its LevelFS is 0.5 / (72000/79200) = 0.55 and vision's 5.5; vision's
// users outrank alice, and dave (no usage, infinite) outranks bob.
func TestLedgerSharesAreFairTree(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run := func(id int64, user, account string, gpus float64, start, end time.Time) accounting.Job {
		tres := accounting.TRES{CPUs: 8, GPUs: gpus, Nodes: 1}
		return accounting.Job{JobID: id, ArrayTaskID: -1, Name: "j", User: user, Account: account, Partition: "h100", QOS: "normal",
			Origin: accounting.OriginSlurm, Submit: start, Start: start, End: end, State: accounting.StateCompleted, Requested: tres, Allocated: tres}
	}
	if err := st.UpsertJobs(ctx, []accounting.Job{
		run(1, "alice", "nlp", 2, ledgerDay(3, 0), ledgerDay(3, 10)),
		run(2, "bob", "vision", 0.5, ledgerDay(5, 0), ledgerDay(5, 4)),
	}); err != nil {
		t.Fatal(err)
	}
	ledger := accounting.Ledger{Store: st, Usage: accounting.UsageConfig{NoDecay: true}, Clock: func() time.Time { return ledgerDay(30, 0) }}
	assocs := []Association{
		{Account: "research"}, {Account: "nlp", Parent: "research"}, {Account: "vision", Parent: "research"},
		{Account: "nlp", User: "alice", Parent: "nlp"}, {Account: "vision", User: "bob", Parent: "vision"}, {Account: "vision", User: "dave", Parent: "vision"},
	}
	type row struct {
		name, parent string
		user         bool
		usage        int64
		levelFS      float64
		fairShare    float64
	}
	tests := []struct {
		name            string
		accounts, users []string
		want            []row
	}{
		{"everything", nil, nil, []row{
			{"root", "", false, 79200, 0, 0},
			{"research", "root", false, 79200, 1, 0},
			{"nlp", "research", false, 72000, 0.55, 0},
			{"alice", "nlp", true, 72000, 1, 1.0 / 3},
			{"vision", "research", false, 7200, 5.5, 0},
			{"bob", "vision", true, 7200, 0.5, 2.0 / 3},
			{"dave", "vision", true, 0, math.MaxFloat64, 1},
		}},
		{"sshare -A vision", []string{"vision"}, nil, []row{
			{"vision", "research", false, 7200, 5.5, 0}, {"bob", "vision", true, 7200, 0.5, 2.0 / 3}, {"dave", "vision", true, 0, math.MaxFloat64, 1},
		}},
		{"sshare -u alice", nil, []string{"alice"}, []row{{"alice", "nlp", true, 72000, 1, 1.0 / 3}}},
	}
	for _, tt := range tests {
		got, err := ledgerShares(ctx, ledger, assocs, tt.accounts, tt.users)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %d rows %+v, want %d", tt.name, len(got), got, len(tt.want))
		}
		for i, w := range tt.want {
			g, shares := got[i], int64(1)
			if w.name == "root" {
				shares = 0 // root has no siblings to share with
			}
			if g.ID != i+1 || g.Name != w.name || g.Parent != w.parent || g.User != w.user || g.Shares != shares || g.RawUsage != w.usage ||
				math.Abs(g.FairshareLevel-w.levelFS) > 1e-9 || math.Abs(g.FairshareFactor-w.fairShare) > 1e-9 {
				t.Errorf("%s row %d: %+v, want %+v", tt.name, i, g, w)
			}
		}
	}
}
