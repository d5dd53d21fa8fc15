package accounting

import (
	"math"
	"testing"
)

func billing(v map[Assoc]float64) Usage {
	u := Usage{ByUser: map[Assoc]TRESSeconds{}}
	for a, b := range v {
		u.ByUser[a] = TRESSeconds{TRESBilling: b}
	}
	return u
}

// The site of DESIGN.md: research (3 shares) -> nlp, vision; default (1).
var siteAssocs = []ShareAssoc{
	{Account: "research", Shares: 3},
	{Account: "nlp", Parent: "research", Shares: 1},
	{Account: "vision", Parent: "research", Shares: 1},
	{Account: "default", Shares: 1},
	{Account: "nlp", User: "alice", Shares: 1},
	{Account: "vision", User: "bob", Shares: 1},
	{Account: "default", User: "carol", Shares: 1},
}

func TestFairTreeByHand(t *testing.T) {
	rows, err := FairTree(siteAssocs, billing(map[Assoc]float64{{"nlp", "alice"}: 300, {"vision", "bob"}: 100}))
	if err != nil {
		t.Fatal(err)
	}
	inf := math.Inf(1)
	// research: S=3/4, U=400/400 -> LevelFS .75; default: S=1/4, U=0 -> inf, so
	// carol ranks first (3/3). Inside research: vision S=.5 U=.25 -> 2 beats
	// nlp S=.5 U=.75 -> 2/3, so bob (2/3) outranks alice (1/3).
	want := []ShareRow{
		{Account: "root", Depth: 0, NormShares: 1, RawUsage: 400, NormUsage: 1, EffectvUsage: 1},
		{Account: "default", Depth: 1, RawShares: 1, NormShares: 0.25, LevelFS: inf},
		{Account: "default", User: "carol", Depth: 2, RawShares: 1, NormShares: 1, FairShare: 1, LevelFS: inf},
		{Account: "research", Depth: 1, RawShares: 3, NormShares: 0.75, RawUsage: 400, NormUsage: 1, EffectvUsage: 1, LevelFS: 0.75},
		{Account: "nlp", Depth: 2, RawShares: 1, NormShares: 0.5, RawUsage: 300, NormUsage: 0.75, EffectvUsage: 0.75, LevelFS: 0.5 / 0.75},
		{Account: "nlp", User: "alice", Depth: 3, RawShares: 1, NormShares: 1, RawUsage: 300, NormUsage: 0.75, EffectvUsage: 1, FairShare: 1.0 / 3, LevelFS: 1},
		{Account: "vision", Depth: 2, RawShares: 1, NormShares: 0.5, RawUsage: 100, NormUsage: 0.25, EffectvUsage: 0.25, LevelFS: 2},
		{Account: "vision", User: "bob", Depth: 3, RawShares: 1, NormShares: 1, RawUsage: 100, NormUsage: 0.25, EffectvUsage: 1, FairShare: 2.0 / 3, LevelFS: 1},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		g := rows[i]
		if g.Account != w.Account || g.User != w.User || g.Depth != w.Depth || g.RawShares != w.RawShares ||
			!near(g.NormShares, w.NormShares) || !near(g.RawUsage, w.RawUsage) || !near(g.NormUsage, w.NormUsage) ||
			!near(g.EffectvUsage, w.EffectvUsage) || !near(g.FairShare, w.FairShare) || !near(g.LevelFS, w.LevelFS) {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func near(a, b float64) bool {
	if math.IsInf(a, 1) || math.IsInf(b, 1) {
		return a == b
	}
	return math.Abs(a-b) < 1e-9
}

func TestFairTreeTiesAndUnknownAssociations(t *testing.T) {
	// Nobody has usage: every LevelFS is inf, all users tie at 1.0. dave
	// charged usage to an account nobody defined: it is added under root.
	rows, err := FairTree(siteAssocs, billing(map[Assoc]float64{{"ghost", "dave"}: 50}))
	if err != nil {
		t.Fatal(err)
	}
	fs := map[string]float64{}
	for _, r := range rows {
		if r.IsUser() {
			fs[r.User] = r.FairShare
		}
	}
	// dave's account is the only one with usage: lowest standing (1/4); the
	// three idle users tie at the top rank (4/4).
	for user, want := range map[string]float64{"alice": 1, "bob": 1, "carol": 1, "dave": 0.25} {
		if !near(fs[user], want) {
			t.Errorf("%s FairShare %v, want %v (all: %v)", user, fs[user], want, fs)
		}
	}
}

func TestFairTreeRejectsBrokenTrees(t *testing.T) {
	cases := map[string][]ShareAssoc{
		"cycle":     {{Account: "a", Parent: "b", Shares: 1}, {Account: "b", Parent: "a", Shares: 1}},
		"duplicate": {{Account: "a", Shares: 1}, {Account: "a", Shares: 2}},
	}
	for name, assocs := range cases {
		if _, err := FairTree(assocs, Usage{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A Queue naming a parent that does not exist is a top-level account, as the scheduling
// core places it, and a user of an account nobody defined sits in it under root: sshare
// still answers for the whole site.
func TestFairTreeHangsOrphansUnderRoot(t *testing.T) {
	rows, err := FairTree([]ShareAssoc{
		{Account: "nlp", Parent: "research", Shares: 1},
		{Account: "asr", Parent: "nlp", Shares: 1},
		{Account: "asr", User: "carol", Shares: 1},
		{Account: "ghost", User: "alice", Shares: 1},
	}, Usage{})
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	for _, r := range rows {
		parents[r.Account+"/"+r.User] = r.Parent
	}
	for k, want := range map[string]string{"nlp/": "root", "asr/": "nlp", "asr/carol": "asr", "ghost/": "root", "ghost/alice": "ghost"} {
		if parents[k] != want {
			t.Errorf("%s under %q, want %q (all: %v)", k, parents[k], want, parents)
		}
	}
}

func TestFairTreeChargesNamespaceUsageToItsAccount(t *testing.T) {
	// nlp's namespace ran Kubernetes workloads (300) beside alice's Slurm jobs (100).
	rows, err := FairTree(siteAssocs, billing(map[Assoc]float64{
		{"nlp", "alice"}: 100, {"nlp", "ns:nlp"}: 300, {"vision", "ns:vision"}: 0, {"ghost", "ns:ghost"}: 50}))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ShareRow{}
	for _, r := range rows {
		if IsManifestUser(r.User) {
			t.Errorf("row %+v: a namespace's principal is no Slurm user and makes no user row", r)
		}
		byName[r.Account+"/"+r.User] = r
	}
	tests := []struct {
		row                string
		rawUsage, effUsage float64
	}{
		{"root/", 450, 1},
		{"research/", 400, 400.0 / 450},
		{"nlp/", 400, 1},                // alice's and the namespace's
		{"nlp/alice", 100, 100.0 / 400}, // her part of the account's usage, not all of it
		{"ghost/", 50, 50.0 / 450},      // an account only Kubernetes used still appears
	}
	for _, tc := range tests {
		r, ok := byName[tc.row]
		if !ok {
			t.Errorf("%s: no row (rows %+v)", tc.row, rows)
			continue
		}
		if !near(r.RawUsage, tc.rawUsage) || !near(r.EffectvUsage, tc.effUsage) {
			t.Errorf("%s: RawUsage %v EffectvUsage %v, want %v %v", tc.row, r.RawUsage, r.EffectvUsage, tc.rawUsage, tc.effUsage)
		}
	}
	// Ranks count Slurm users only: alice, bob, carol.
	if fs := byName["default/carol"].FairShare; !near(fs, 1) {
		t.Errorf("carol FairShare %v, want 1 (3 of 3 users)", fs)
	}
}
