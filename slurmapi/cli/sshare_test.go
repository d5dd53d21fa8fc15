package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func sshare(args []string, out *strings.Builder) error { return runSshare(args, out) }

func TestSshareShowsTheFairTree(t *testing.T) {
	ledgerServer(t, "alice")
	got, err := runCLI(t, sshare, "-P")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if lines[0] != "Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare" {
		t.Errorf("header %q", lines[0])
	}
	// The tree: root, nlp with alice, vision with alice and bob.
	var who []string
	for _, l := range lines[1:] {
		f := strings.Split(l, "|")
		who = append(who, strings.TrimSpace(f[0])+"/"+f[1])
	}
	if strings.Join(who, " ") != "root/ nlp/ nlp/alice vision/ vision/alice vision/bob" {
		t.Errorf("rows %v", who)
	}
	// nlp and vision hold one share each of root: NormShares 0.5.
	if !strings.Contains(got, "nlp||1|0.500000|") || !strings.Contains(got, "vision||1|0.500000|") {
		t.Errorf("accounts' shares:\n%s", got)
	}
}

func TestSshareNarrowsAndLongForm(t *testing.T) {
	ledgerServer(t, "alice")
	got, err := runCLI(t, sshare, "-u", "bob", "-l", "-n", "-P")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], "  vision|bob|1|0.500000|") || len(strings.Split(lines[2], "|")) != 9 {
		t.Errorf("sshare -u bob -l:\n%s\nwant root, vision and bob with 9 long columns", got)
	}
	js, err := runCLI(t, sshare, "--json", "-A", "nlp")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Rows []struct {
			Account string   `json:"account"`
			User    string   `json:"user"`
			LevelFS *float64 `json:"level_fs"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(js), &body); err != nil || len(body.Rows) != 3 || body.Rows[2].User != "alice" {
		t.Errorf("sshare --json -A nlp: %v %s", err, js)
	}
	if _, err := runCLI(t, sshare, "extra"); err == nil {
		t.Error("a stray argument was accepted")
	}
}
