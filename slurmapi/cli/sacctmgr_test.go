package cli

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/client"
)

// TestSacctmgrLayouts: sacctmgr show's columns, widths, '+' for a cut
// value and -P, as Slurm's sacctmgr prints them.
func TestSacctmgrLayouts(t *testing.T) {
	var b strings.Builder
	writeSacctmgr(&b, accountColumns, []client.Account{{Name: "research", Description: "research groups", Organization: "lab"}, {Name: "nlp", Description: "language models and the people who train them", Organization: "research"}}, false, false)
	admin := client.User{Name: "root", AdminLevel: []string{"Administrator"}}
	admin.Default.Account = "root"
	alice := client.User{Name: "alice"}
	alice.Default.Account = "nlp"
	writeSacctmgr(&b, userColumns, []client.User{admin, alice}, false, false)
	assoc := client.Association{Cluster: "sluice", Account: "nlp", User: "alice", QOS: []string{"normal", "preemptible"}, SharesRaw: 1}
	assoc.Default.QOS = "preemptible"
	writeSacctmgr(&b, assocColumns, []client.Association{assoc}, false, false)
	high := client.QOS{Name: "high", Priority: client.Set(1000), UsageFactor: client.FloatNoVal{Set: true, Number: 2}}
	high.Limits.Max.WallClock.Per.Job = client.Set(240)
	high.Limits.Max.TRES.Per.User = []client.TRESCount{{Type: "gres", Name: "gpu", Count: 16}}
	writeSacctmgr(&b, qosColumns, []client.QOS{high}, false, false)
	writeSacctmgr(&b, userColumns, []client.User{admin, alice}, true, true)
	checkGolden(t, "sacctmgr.golden", b.String())
}
