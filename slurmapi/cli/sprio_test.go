package cli

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/client"
)

// TestSprioLayouts: pending jobs only, with the priority the server gives (an
// operator's + QOS's - nice) and its QOS and nice parts, in sprio's default and -l
// layouts.
func TestSprioLayouts(t *testing.T) {
	jobs := []client.Job{
		{JobID: 44, UserName: "bob", Partition: "a100", QOS: "high", JobState: []string{"PENDING"}, Nice: 50, Priority: client.Set(950)},
		{JobID: 42, UserName: "alice", Partition: "h100", QOS: "normal", JobState: []string{"RUNNING"}},
		{JobID: 43, UserName: "alice", Partition: "h100", QOS: "normal", JobState: []string{"PENDING"}, Priority: client.Set(510)},
	}
	rows := sprioRows(jobs, map[string]int64{"normal": 10, "high": 1000})
	for _, tc := range []struct{ name, format string }{{"sprio.golden", sprioDefaultFormat}, {"sprio-long.golden", sprioLongFormat}} {
		var b strings.Builder
		if err := writeTable(&b, tc.format, sprioHeaders, false, len(rows), func(r int, l byte) string { return sprioValue(rows[r], l) }); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, tc.name, b.String())
	}
}
