package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/accounting/dashboard"
	"github.com/sluicehq/sluice/accounting/store"
	"github.com/sluicehq/sluice/slurmapi"
)

// ledgerNow is the clock of the CLI accounting tests: the end of November 2026.
var ledgerNow = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func novDay(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }

// ledgerServer serves the accounting API over a real SQLite ledger holding:
// alice's 2-GPU nlp job (10 h, COMPLETED), bob's half-GPU vision job (4 h, FAILED 1)
// and alice's 1-GPU vision job still running since Nov 30 12:00. The CLI finds it
// through SLUICE_URL with a token for user.
func ledgerServer(t *testing.T, user string) {
	job := func(id int64, name, user, account string, gpus float64, start, end time.Time, st accounting.JobState) accounting.Job {
		tres := accounting.TRES{CPUs: 8, MemMB: 65536, GPUs: gpus, Nodes: 1}
		return accounting.Job{JobID: id, ArrayTaskID: -1, Name: name, User: user, Account: account, Partition: "h100", QOS: "normal",
			Origin: accounting.OriginSlurm, Submit: start.Add(-time.Hour), Start: start, End: end, State: st,
			Requested: tres, Allocated: tres, NodeList: "h100-0"}
	}
	failed := job(2, "eval", "bob", "vision", 0.5, novDay(5, 0), novDay(5, 4), accounting.StateFailed)
	failed.ExitCode = 1
	jobs := []accounting.Job{
		job(1, "train", "alice", "nlp", 2, novDay(3, 0), novDay(3, 10), accounting.StateCompleted),
		failed,
		job(3, "finetune", "alice", "vision", 1, novDay(30, 12), time.Time{}, accounting.StateRunning),
	}
	serveLedger(t, user, jobs, func(context.Context) ([]accounting.ShareAssoc, error) {
		return []accounting.ShareAssoc{{Account: "nlp", Shares: 1}, {Account: "vision", Shares: 1},
			{Account: "nlp", User: "alice", Shares: 1}, {Account: "vision", User: "alice", Shares: 1}, {Account: "vision", User: "bob", Shares: 1}}, nil
	})
}

// serveLedger serves the accounting API over a real SQLite ledger holding jobs,
// with assocs as its fair-share tree, at ledgerNow; alice operates the site (her
// -a sees bob's jobs). The CLI finds it through SLUICE_URL with a token for user.
func serveLedger(t *testing.T, user string, jobs []accounting.Job, assocs func(context.Context) ([]accounting.ShareAssoc, error)) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.UpsertJobs(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	auth := slurmapi.AuthConfig{Key: []byte("sacct-test-key-0123456789abcdef!"), Operators: []string{"alice"}}
	d, err := dashboard.New(dashboard.Config{Store: s, Clock: func() time.Time { return ledgerNow },
		Authenticate: func(r *http.Request) (dashboard.Viewer, error) {
			id, e := auth.Authenticate(r, time.Now())
			if e != nil {
				return nil, e
			}
			return id, nil
		},
		Assocs: assocs})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(dashboard.Prefix, d)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Setenv("SLUICE_URL", srv.URL)
	token, err := slurmapi.MintToken(auth.Key, user, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLURM_JWT", token)
}

func runCLI(t *testing.T, run func(args []string, out *strings.Builder) error, args ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	err := run(args, &out)
	return out.String(), err
}

func sacct(args []string, out *strings.Builder) error { return runSacct(args, out, ledgerNow) }

func TestSacctDefaultsToTheTokensUser(t *testing.T) {
	ledgerServer(t, "alice")
	got, err := runCLI(t, sacct, "-S", "2026-11-01")
	if err != nil {
		t.Fatal(err)
	}
	// Slurm's default fields plus AllocTRES; alice sees her jobs, not bob's.
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	want := []string{
		"1                 train       h100        nlp          8  COMPLETED      0:0          cpu=8,gres/gpu=2,mem=64G,node=1 ",
		"3              finetune       h100     vision          8    RUNNING      0:0          cpu=8,gres/gpu=1,mem=64G,node=1 ",
	}
	if len(lines) != 4 || !strings.Contains(lines[0], "JobName  Partition    Account  AllocCPUS      State ExitCode") ||
		lines[2] != want[0] || lines[3] != want[1] {
		t.Errorf("sacct as alice:\n%s\nwant alice's jobs 1 and 3:\n%s", got, strings.Join(want, "\n"))
	}
}

func TestSacctFiltersAndLayouts(t *testing.T) {
	ledgerServer(t, "alice")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"all users, parsable", []string{"-a", "-S", "2026-11-01", "-P", "-o", "JobID,User,State,ExitCode"},
			"JobID|User|State|ExitCode\n1|alice|COMPLETED|0:0\n2|bob|FAILED|1:0\n3|alice|RUNNING|0:0\n"},
		{"by state, no header", []string{"-a", "-S", "2026-11-01", "-s", "F", "-n", "-p", "-o", "JobID,AllocTRES"},
			"2|cpu=8,gres/gpu=0.5,mem=64G,node=1|\n"},
		{"by account and window", []string{"-a", "-A", "vision", "-S", "2026-11-20", "-E", "now", "-P", "-o", "JobID,Start,Elapsed"},
			"JobID|Start|Elapsed\n3|2026-11-30T12:00:00|12:00:00\n"},
		{"job ids need no window", []string{"-j", "2", "-u", "bob", "-P", "-o", "JobID,JobName"},
			"JobID|JobName\n2|eval\n"},
		{"by name", []string{"-a", "-S", "2026-11-01", "--name=eval", "-P", "-o", "JobID,JobName"},
			"JobID|JobName\n2|eval\n"},
		{"getopt style: attached values, bundled switches", []string{"-a", "-S2026-11-01", "-sF", "-np", "-oJobID,State"},
			"2|FAILED|\n"},
		{"today by default: nothing ran today", []string{"-a", "-P", "-o", "JobID"}, "JobID\n3\n"},
		{"relative window", []string{"-a", "-S", "now-2days", "-P", "-n", "-o", "JobID"}, "3\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runCLI(t, sacct, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("sacct %v:\n%s\nwant:\n%s", tt.args, got, tt.want)
			}
		})
	}
}

func TestSacctJSON(t *testing.T) {
	ledgerServer(t, "bob")
	got, err := runCLI(t, sacct, "-S", "2026-11-01", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Jobs []accounting.Job }
	if err := json.Unmarshal([]byte(got), &body); err != nil {
		t.Fatalf("%v in %s", err, got)
	}
	if len(body.Jobs) != 1 || body.Jobs[0].JobID != 2 || body.Jobs[0].Allocated.GPUs != 0.5 || body.Jobs[0].ExitCode != 1 {
		t.Errorf("bob's jobs as JSON: %+v", body.Jobs)
	}
}

func TestSacctRefusesBadInput(t *testing.T) {
	ledgerServer(t, "alice")
	tests := []struct {
		args  []string
		usage bool
		says  string
	}{
		{[]string{"-S", "last tuesday"}, true, "invalid time"},
		{[]string{"-S", "now-3fortnights"}, true, "unknown unit"},
		{[]string{"-o", "JobID,Colour"}, true, "invalid field"},
		{[]string{"--json", "--csv"}, true, "exclude each other"},
		{[]string{"-s", "SLEEPY"}, false, "unknown job state"},
		{[]string{"-S", "2026-11-02", "-E", "2026-11-01"}, false, "not after start"},
		{[]string{"stray"}, true, "unexpected argument"},
	}
	for _, tt := range tests {
		_, err := runCLI(t, sacct, tt.args...)
		var ue UsageError
		if err == nil || errors.As(err, &ue) != tt.usage || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("sacct %v: error %v (usage error: %v), want one saying %q (usage error: %v)", tt.args, err, errors.As(err, &ue), tt.says, tt.usage)
		}
	}
}

func TestParseSlurmTime(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 30, 0, 0, time.UTC)
	tests := map[string]time.Time{
		"2026-11-01":          time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		"2026-11-01T08:15":    time.Date(2026, 11, 1, 8, 15, 0, 0, time.UTC),
		"2026-11-01T08:15:30": time.Date(2026, 11, 1, 8, 15, 30, 0, time.UTC),
		"11/05":               time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC),
		"11/05/25":            time.Date(2025, 11, 5, 0, 0, 0, 0, time.UTC),
		"08:00":               time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC),
		"today":               time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		"yesterday":           time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		"now":                 now,
		"now-1hour":           now.Add(-time.Hour),
		"now-7days":           now.AddDate(0, 0, -7),
		"now+30":              now.Add(30 * time.Second),
	}
	for in, want := range tests {
		got, err := parseSlurmTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseSlurmTime(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
}
