package report

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

func TestSacctGolden(t *testing.T) {
	s := site(t)
	cases := []struct {
		name   string
		filter accounting.JobFilter
		format string
		opts   TextOptions
	}{
		{"sacct_default.txt", accounting.JobFilter{}, "", TextOptions{}},
		{"sacct_vision_november.txt", accounting.JobFilter{Accounts: []string{"vision"}, Start: nov, End: dec},
			"JobID,JobName%30,User,State,Start,End,Elapsed,AllocTRES%45", TextOptions{}},
		{"sacct_parsable.txt", accounting.JobFilter{States: []accounting.JobState{accounting.StateRunning, accounting.StatePending}},
			"JobID,User,Account,State,NodeList,ReqTRES", TextOptions{Parsable2: true}},
		{"sacct_noheader_cut.txt", accounting.JobFilter{Users: []string{"bob"}}, "JobID,State,AllocTRES", TextOptions{NoHeader: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jobs, err := Sacct(context.Background(), s, SacctQuery{Filter: c.filter})
			if err != nil {
				t.Fatal(err)
			}
			tab, err := SacctTable(jobs, c.format, now)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := tab.WriteText(&b, c.opts); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name, b.Bytes())
		})
	}
}

func TestSacctRejectsBadInput(t *testing.T) {
	s := site(t)
	if _, err := Sacct(context.Background(), s, SacctQuery{Filter: accounting.JobFilter{Start: dec, End: nov}}); err == nil {
		t.Error("a window ending before it starts was accepted")
	}
	for _, format := range []string{"JobID,Bogus", "JobName%abc", "JobName%0", ","} {
		if _, err := SacctTable(nil, format, now); err == nil {
			t.Errorf("--format %q was accepted", format)
		}
	}
}

func TestSacctJSONAndCSV(t *testing.T) {
	s := site(t)
	jobs, err := Sacct(context.Background(), s, SacctQuery{Filter: accounting.JobFilter{JobIDs: []int64{6}}})
	if err != nil {
		t.Fatal(err)
	}
	tab, _ := SacctTable(jobs, "JobID,State,AllocTRES", now)
	var js, cs bytes.Buffer
	if err := Write(&js, FormatJSON, tab, jobs, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	var back []accounting.Job
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back) != 1 || back[0].RequeueCount != 1 || back[0].Allocated.GPUs != 4 {
		t.Fatalf("JSON round trip: %v %+v", err, back)
	}
	if err := Write(&cs, FormatCSV, tab, jobs, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "JobID,State,AllocTRES\n6,COMPLETED,\"cpu=32,gres/gpu=4,mem=256G,node=1\"\n"; cs.String() != want {
		t.Fatalf("CSV:\n%s\nwant\n%s", cs.String(), want)
	}
}

// GPU-seconds per report, added up by hand in site's comment.
func TestSreportNumbersByHand(t *testing.T) {
	s := site(t)
	ctx := context.Background()
	const h = 3600.0
	util, err := ClusterUtilization(ctx, s, novQry, now)
	if err != nil {
		t.Fatal(err)
	}
	u := util[0]
	if u.TRES != accounting.TRESGPU || u.Allocated != 66*h || u.Down != 96*h || u.Reported != 8640*h || u.Idle != 8478*h {
		t.Fatalf("utilization %+v, want allocated 66 h, down 96 h, reported 8640 h, idle 8478 h (in GPU-seconds)", u)
	}
	rows, err := UserUtilizationByAccount(ctx, s, novQry, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		user, account string
		hours         float64
	}{{"alice", "nlp", 20}, {"bob", "vision", 18}, {"alice", "vision", 16}, {"carol", "default", 12}}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		if rows[i].User != w.user || rows[i].Account != w.account || rows[i].Used != w.hours*h {
			t.Errorf("row %d: %+v, want %s/%s %v GPU-h", i, rows[i], w.user, w.account, w.hours)
		}
	}
	// A window ending in the future counts only up to now; the running job
	// is charged for the 12 h it has run.
	later, err := ClusterUtilization(ctx, s, SreportQuery{Start: day(30, 0), End: day(30, 0).AddDate(0, 0, 7)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if later[0].Allocated != 12*h {
		t.Fatalf("allocated in a window reaching past now: %v GPU-s, want 12 GPU-h", later[0].Allocated)
	}
}

func TestSreportGolden(t *testing.T) {
	s := site(t)
	ctx := context.Background()
	cases := []struct {
		name   string
		q      SreportQuery
		report func(SreportQuery) (Table, error)
		opts   TextOptions
	}{
		{"sreport_utilization_hours.txt", SreportQuery{Units: Hours}, utilTable(ctx, s), TextOptions{}},
		{"sreport_utilization_percent_gpu_cpu.txt", SreportQuery{Units: Percent, TRES: []string{"gres/gpu", "cpu"}}, utilTable(ctx, s), TextOptions{}},
		{"sreport_utilization_seconds_parsable.txt", SreportQuery{Units: Seconds}, utilTable(ctx, s), TextOptions{Parsable2: true}},
		{"sreport_account_by_user.txt", SreportQuery{Units: Hours}, assocTable(ctx, s, "AccountUtilizationByUser", AccountUtilizationByUser), TextOptions{}},
		{"sreport_account_by_user_tree.txt", SreportQuery{Units: Hours, Parents: map[string]string{"nlp": "research", "vision": "research"}},
			assocTable(ctx, s, "AccountUtilizationByUser", AccountUtilizationByUser), TextOptions{}},
		{"sreport_user_by_account_minutes.txt", SreportQuery{}, assocTable(ctx, s, "UserUtilizationByAccount", UserUtilizationByAccount), TextOptions{}},
		{"sreport_top_usage.txt", SreportQuery{Units: Hours, TopCount: 2}, assocTable(ctx, s, "TopUsage", TopUsage), TextOptions{}},
		{"sreport_sizes_by_account.txt", SreportQuery{Units: Hours}, sizesTable(ctx, s), TextOptions{}},
		{"sreport_sizes_percent_noheader.txt", SreportQuery{Units: Percent}, sizesTable(ctx, s), TextOptions{NoHeader: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.q.Start, c.q.End = nov, dec
			tab, err := c.report(c.q)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := tab.WriteText(&b, c.opts); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name, b.Bytes())
		})
	}
}

func utilTable(ctx context.Context, s accounting.Store) func(SreportQuery) (Table, error) {
	return func(q SreportQuery) (Table, error) {
		rows, err := ClusterUtilization(ctx, s, q, now)
		return UtilizationTable(rows, q), err
	}
}

func assocTable(ctx context.Context, s accounting.Store, kind string,
	f func(context.Context, accounting.Store, SreportQuery, time.Time) ([]AssocUsage, error)) func(SreportQuery) (Table, error) {
	return func(q SreportQuery) (Table, error) {
		rows, err := f(ctx, s, q, now)
		if err != nil {
			return Table{}, err
		}
		return AssocTable(kind, rows, q)
	}
}

func sizesTable(ctx context.Context, s accounting.Store) func(SreportQuery) (Table, error) {
	return func(q SreportQuery) (Table, error) {
		sz, err := JobSizesByAccount(ctx, s, q, now)
		return SizesTable(sz, q), err
	}
}

func TestSreportRejectsBadInput(t *testing.T) {
	s := site(t)
	ctx := context.Background()
	for name, q := range map[string]SreportQuery{
		"no window":          {},
		"backwards window":   {Start: dec, End: nov},
		"unknown TRES":       {Start: nov, End: dec, TRES: []string{"gres/tpu"}},
		"negative top count": {Start: nov, End: dec, TopCount: -1},
		"account tree cycle": {Start: nov, End: dec, Parents: map[string]string{"nlp": "vision", "vision": "nlp"}},
	} {
		_, errTop := TopUsage(ctx, s, q, now)
		_, errAcct := AccountUtilizationByUser(ctx, s, q, now)
		if errAcct == nil || (errTop == nil && q.Parents == nil) {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := JobSizesByAccount(ctx, s, SreportQuery{Start: nov, End: dec, Grouping: []float64{4, 2}}, now); err == nil {
		t.Error("decreasing Grouping accepted")
	}
	for _, u := range []string{"hours", "H", "min", "percent", "s"} {
		if _, err := ParseTimeUnit(u); err != nil {
			t.Errorf("ParseTimeUnit(%q): %v", u, err)
		}
	}
	if _, err := ParseTimeUnit("fortnights"); err == nil || !strings.Contains(err.Error(), "fortnights") {
		t.Errorf("ParseTimeUnit(fortnights): %v", err)
	}
}

func TestSshareGolden(t *testing.T) {
	s := site(t)
	assocs := []accounting.ShareAssoc{
		{Account: "research", Shares: 3},
		{Account: "nlp", Parent: "research", Shares: 1},
		{Account: "vision", Parent: "research", Shares: 1},
		{Account: "default", Shares: 1},
		{Account: "nlp", User: "alice", Shares: 1},
		{Account: "nlp", User: "dave", Shares: 1},
		{Account: "vision", User: "alice", Shares: 1},
		{Account: "vision", User: "bob", Shares: 1},
		{Account: "default", User: "carol", Shares: 1},
	}
	// Without decay RawUsage is plain GPU-seconds from site: carol 43200,
	// alice/nlp 72000, alice/vision 172800 (all 6 h of job 3), bob 7200 + 57600.
	cfg := accounting.UsageConfig{NoDecay: true}
	cases := []struct {
		name string
		q    SshareQuery
		opts TextOptions
	}{
		{"sshare.txt", SshareQuery{}, TextOptions{}},
		{"sshare_long.txt", SshareQuery{Long: true}, TextOptions{}},
		{"sshare_vision_parsable.txt", SshareQuery{Accounts: []string{"vision"}}, TextOptions{Parsable: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, err := Sshare(context.Background(), s, assocs, cfg, c.q, now)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := SshareTable(rows, c.q.Long).WriteText(&b, c.opts); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name, b.Bytes())
		})
	}
}

// TestSacctListsSteps: sacct -j ID lists the job, then ID.batch and ID.0
// with their own state, exit code and TRES, as Slurm does.
func TestSacctListsSteps(t *testing.T) {
	s := site(t)
	ctx := context.Background()
	start := now.Add(-time.Hour)
	if err := s.RecordSteps(ctx, []accounting.Step{
		{JobID: 6, StepID: "0", Name: "python", State: accounting.StateFailed, ExitCode: 3, Start: start, End: start.Add(time.Minute), Tasks: 2, NodeList: "job-6-[0-1]", TRES: accounting.TRES{CPUs: 2, GPUs: 2, Nodes: 2}},
		{JobID: 6, StepID: "batch", Name: "batch", State: accounting.StateFailed, ExitCode: 3, Start: start, End: start.Add(2 * time.Minute), Tasks: 1, TRES: accounting.TRES{CPUs: 1, Nodes: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	jobs, err := Sacct(ctx, s, SacctQuery{Filter: accounting.JobFilter{JobIDs: []int64{6}}})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := SacctTable(jobs, "JobID,JobName,State,ExitCode,AllocTRES%40", now)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tab.WriteText(&b, TextOptions{Parsable2: true, NoHeader: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{"6.batch|batch|FAILED|3:0|cpu=1,node=1", "6.0|python|FAILED|3:0|cpu=2,gres/gpu=2,node=2"}
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "6|") || lines[1] != want[0] || lines[2] != want[1] {
		t.Errorf("sacct -j 6:\n%s\nwant the job, then:\n%s", b.String(), strings.Join(want, "\n"))
	}
}
