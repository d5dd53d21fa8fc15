package cli

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/client"
)

func sinfoSample() ([]client.Partition, []client.Node) {
	parts := []client.Partition{{Name: "h100", Flags: []string{"DEFAULT"}}, {Name: "a100-long"}}
	parts[0].Maximums.Time = client.Set(2880)
	parts[1].Maximums.Time = client.NoVal{Set: true, Infinite: true}
	n := func(name, part string, state ...string) client.Node {
		return client.Node{Name: name, State: state, Partitions: []string{part}, CPUs: 128, RealMemory: 1048576, GRES: "gpu:h100:8"}
	}
	nodes := []client.Node{
		n("h100-0", "h100", "IDLE"), n("h100-1", "h100", "MIXED"), n("h100-2", "h100", "ALLOCATED"),
		n("h100-3", "h100", "IDLE", "DRAIN"), n("a100-0", "a100-long", "IDLE"), n("a100-1", "a100-long", "DOWN"),
	}
	nodes[3].Reason, nodes[3].ReasonSetUser = "maint", "root"
	return parts, nodes
}

// TestSinfoLayouts: sinfo -l, -N -l, -s, -O and %#P in Slurm's documented
// layouts (the date line of -l is printed by runSinfo, not here).
func TestSinfoLayouts(t *testing.T) {
	parts, nodes := sinfoSample()
	fromFields, err := formatFromFields("sinfo", "partition:12,nodes:.5,statelong,nodelist", sinfoFields)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, format string
		rows         []sinfoRow
	}{
		{"sinfo-long.golden", sinfoLongFormat, sinfoRows(parts, nodes, false, false)},
		{"sinfo-node-long.golden", sinfoNodeLongFormat, sinfoRows(parts, nodes, true, false)},
		{"sinfo-summarize.golden", sinfoSummaryFormat, sinfoSummary(parts, nodes)},
		{"sinfo-Format.golden", fromFields, sinfoRows(parts, nodes, false, false)},
		{"sinfo-auto-width.golden", "%#P %.6D %t", sinfoRows(parts, nodes, false, false)},
	} {
		var b strings.Builder
		if err := writeTable(&b, tc.format, sinfoHeaders, false, len(tc.rows), func(r int, l byte) string { return sinfoValue(tc.rows[r], l) }); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, tc.name, b.String())
	}
	var b strings.Builder
	if err := writeSinfoJSON(&b, sinfoSummary(parts, nodes)); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "sinfo-summarize.json.golden", b.String())
	if _, err := formatFromFields("sinfo", "partition,colour", sinfoFields); err == nil {
		t.Error("an unknown -O field was accepted")
	}
}

// sinfo -O features,topology: nodes of one partition and state that differ in features or
// topology are shown on rows of their own, so each row is true of every node it lists.
func TestSinfoFeaturesAndTopology(t *testing.T) {
	nodes := []client.Node{
		{Name: "n1", State: []string{"IDLE"}, Partitions: []string{"p"}, Features: []string{"ib"}, Topology: "rack=r1"},
		{Name: "n2", State: []string{"IDLE"}, Partitions: []string{"p"}, Features: []string{"ib"}, Topology: "rack=r1"},
		{Name: "n3", State: []string{"IDLE"}, Partitions: []string{"p"}, Topology: "rack=r2"},
	}
	format, err := formatFromFields("sinfo", "nodelist:8,features:6,topology:10", sinfoFields)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range sinfoRows(nil, nodes, false, false) {
		got = append(got, sinfoValue(r, 'N')+" "+sinfoValue(r, 'f')+" "+sinfoValue(r, 'Y'))
	}
	if want := []string{"n3 (null) rack=r2", "n[1-2] ib rack=r1"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rows %q, want %q (format %q)", got, want, format)
	}
}
