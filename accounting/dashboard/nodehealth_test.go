package dashboard

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/accounting"
)

// TestNodeHealthShowsHistory: the node health endpoint lists each node's faults (with how
// long they kept it out) and validations in the window, newest first, filters by node, and
// carries the per-partition availability of sreport cluster NodeHealth.
func TestNodeHealthShowsHistory(t *testing.T) {
	srv, s := serve(t)
	if err := s.RecordValidation(context.Background(), accounting.NodeValidation{Node: "gpu-01", Kind: "idle",
		Start: day(20, 0), End: day(20, 1), Result: "Failed", Detail: "validate exited 1"}); err != nil {
		t.Fatal(err)
	}
	var got NodeHealth
	if code := get(t, srv, "/ui/api/node-health?nodes=gpu-01&"+novWindow, &got); code != 200 {
		t.Fatalf("status %d", code)
	}
	if len(got.History) != 2 {
		t.Fatalf("history %+v, want the validation then the fault", got.History)
	}
	v, f := got.History[0], got.History[1]
	if v.Kind != "idle" || v.What != "Failed: validate exited 1" || !v.Start.Equal(day(20, 0)) {
		t.Errorf("validation %+v", v)
	}
	if f.Kind != "fault" || f.What != "XID 79" || f.OutOfService != 12*3600 {
		t.Errorf("fault %+v, want XID 79 out 12 h", f)
	}
	if len(got.Partitions) == 0 || got.Partitions[0].Faults != 1 || got.Partitions[0].Failed != 1 {
		t.Errorf("partitions %+v, want the fault and the failed validation counted", got.Partitions)
	}
	var none NodeHealth
	get(t, srv, "/ui/api/node-health?nodes=gpu-99&"+novWindow, &none)
	if len(none.History) != 0 {
		t.Errorf("history of an unknown node: %+v", none.History)
	}
}
