package report

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// sacct's NodeList is a Slurm host list, whether the ledger kept the job's
// nodes as "a,b" or a step's as a host list already.
func TestSacctNodeListIsAHostList(t *testing.T) {
	for _, tc := range []struct{ kept, want string }{
		{"h100-0,h100-1", "h100-[0-1]"},
		{"h100-1,h100-0,h100-3", "h100-[0-1,3]"},
		{"h100-[0,2]", "h100-[0,2]"}, // a step's host list, a comma inside its brackets
		{"h100-[0-1],a100-0", "a100-0,h100-[0-1]"},
		{"", "None assigned"},
	} {
		tab, err := SacctTable([]accounting.Job{{JobID: 1, ArrayTaskID: -1, NodeList: tc.kept}}, "NodeList", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if got := tab.Rows[0][0]; got != tc.want {
			t.Errorf("NodeList kept as %q prints %q, want %q", tc.kept, got, tc.want)
		}
	}
}
