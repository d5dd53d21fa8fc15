package slurmapi

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"
)

// submissionBudget is what decoding one submission of a megabyte may allocate: the
// server, its scheduler and its webhook share one process, so no body may cost it more
// than this, whatever its text (issue: a 21 KB node list once took 1.1 GB).
const submissionBudget = 50 << 20

// A megabyte of hostile placement, array or dependency text is refused at the cost of
// reading it: node lists are bounded before they are expanded, arrays before they are
// listed.
func TestMegabyteSubmissionStaysWithinBudget(t *testing.T) {
	const mib = 1 << 20
	ranges := "n[" + strings.Repeat("0-4000,", mib/8) + "0]"
	items := strings.Repeat("n[0-4000],", mib/11)
	script := func(directive string) map[string]any {
		return map[string]any{"script": "#!/bin/sh\n#SBATCH " + directive + "\nhostname\n", "job": map[string]any{"partition": "h100"}}
	}
	for name, body := range map[string]map[string]any{
		"required_nodes ranges": {"script": "#!/bin/sh\n", "job": map[string]any{"partition": "h100", "required_nodes": []string{ranges}}},
		"excluded_nodes items":  {"script": "#!/bin/sh\n", "job": map[string]any{"partition": "h100", "excluded_nodes": []string{items}}},
		"many required_nodes":   {"script": "#!/bin/sh\n", "job": map[string]any{"partition": "h100", "required_nodes": strings.Split(strings.Repeat("n[0-4000];", mib/11), ";")}},
		"#SBATCH -w":            script("-w " + ranges),
		"#SBATCH -x":            script("-x " + items),
		"array":                 {"script": "#!/bin/sh\n", "job": map[string]any{"partition": "h100", "array": strings.Repeat("0-4000000,", mib/11) + "0"}},
		"dependency":            {"script": "#!/bin/sh\n", "job": map[string]any{"partition": "h100", "dependency": "afterok:" + strings.Repeat("1:", mib/2) + "1"}},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, _, e := DecodeSubmission(b, "alice", testCatalog(), SubmitPolicy{ShardsPerGPU: 8}, time.Now())
			runtime.ReadMemStats(&after)
			if e == nil {
				t.Errorf("a %d-byte hostile submission was accepted", len(b))
			} else if e.Status < 400 || e.Status > 499 {
				t.Errorf("answered %d, want a 4xx", e.Status)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > submissionBudget {
				t.Errorf("decoding %d bytes allocated %d MiB, want under %d MiB", len(b), got>>20, submissionBudget>>20)
			}
		})
	}
}
