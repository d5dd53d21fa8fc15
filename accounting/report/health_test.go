package report

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/store"
)

// TestNodeHealthByHand: November in two partitions, numbers worked out by hand.
//
//	h100: gpu-01 all month (720 h) + gpu-02 from the 16th (360 h) = 1080 node-h reported;
//	      gpu-01 down 12 h (whole node), gpu-02 2 of 8 GPUs out for 4 h (= 1 node-h):
//	      13 node-h down, availability 1 - 13/1080 = 98.80%, 2 faults,
//	      MTBF (1080 - 13) / 2 = 533.5 h; validations 2 passed, 1 failed, 1 preempted.
//	a100: a-01 all month, never down: 100%, no faults, MTBF "-".
func TestNodeHealthByHand(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, n := range []accounting.Node{
		{Name: "gpu-01", Partition: "h100", TRES: accounting.TRES{GPUs: 8}, Added: day(1, 0).AddDate(0, -1, 0)},
		{Name: "gpu-02", Partition: "h100", TRES: accounting.TRES{GPUs: 8}, Added: day(16, 0)},
		{Name: "a-01", Partition: "a100", TRES: accounting.TRES{GPUs: 4}, Added: day(1, 0)},
	} {
		if err := s.UpsertNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []accounting.NodeDown{
		{Node: "gpu-01", Start: day(10, 0), End: day(10, 12), Reason: "XID 79"},
		{Node: "gpu-02", Start: day(20, 0), End: day(20, 4), Reason: "row remap pending", TRES: accounting.TRES{GPUs: 2}},
	} {
		if err := s.RecordNodeDown(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range []accounting.NodeValidation{
		{Node: "gpu-01", Kind: "idle", Result: "Passed"}, {Node: "gpu-01", Kind: "repair", Result: "Passed"},
		{Node: "gpu-02", Partition: "h100", Kind: "idle", Result: "Failed"}, {Node: "gpu-02", Kind: "idle", Result: "Preempted"},
	} {
		v.Start, v.End = day(21+i, 0), day(21+i, 1)
		if err := s.RecordValidation(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := NodeHealth(ctx, s, novQry, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Partition != "a100" || rows[1].Partition != "h100" {
		t.Fatalf("rows %+v, want a100 then h100", rows)
	}
	a, h := rows[0], rows[1]
	if a.Nodes != 1 || a.Availability != 1 || a.Faults != 0 || a.MTBF != 0 {
		t.Errorf("a100 %+v, want one node always available", a)
	}
	hours := func(s float64) float64 { return s / 3600 }
	if h.Nodes != 2 || hours(h.Reported) != 1080 || hours(h.Down) != 13 || h.Faults != 2 ||
		hours(h.MTBF) != 533.5 || math.Abs(h.Availability-(1-13.0/1080)) > 1e-9 {
		t.Errorf("h100 %+v: want 2 nodes, 1080 h reported, 13 h down, 2 faults, MTBF 533.5 h", h)
	}
	if h.Passed != 2 || h.Failed != 1 || h.Preempted != 1 {
		t.Errorf("h100 validations %d passed %d failed %d preempted, want 2 1 1", h.Passed, h.Failed, h.Preempted)
	}
	q := novQry
	q.Units = Hours
	tbl := HealthTable(rows, q)
	want := []string{"sluice", "h100", "2", "1080", "13", "98.80%", "2", "533", "2", "1", "1"}
	if got := tbl.Rows[1]; len(got) != len(want) {
		t.Fatalf("row %v, want %v", got, want)
	} else {
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("column %s = %q, want %q", tbl.Columns[i].Name, got[i], want[i])
			}
		}
	}
	if tbl.Rows[0][7] != "-" {
		t.Errorf("a100 MTBF %q, want - without faults", tbl.Rows[0][7])
	}
}
