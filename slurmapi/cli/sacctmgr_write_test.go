package cli

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestParseSacctmgrChange: sacctmgr's add/modify/delete syntax as Slurm
// documents it, and the refusals that keep a change from half applying.
func TestParseSacctmgrChange(t *testing.T) {
	for _, tc := range []struct {
		args    string
		want    sacctmgrChange
		wantErr string
	}{
		{args: "add account science Description=physics Parent=research",
			want: sacctmgrChange{verb: "add", entity: "account", names: []string{"science"}, set: map[string]string{"description": "physics", "parent": "research"}}},
		{args: "create account name=a,b",
			want: sacctmgrChange{verb: "add", entity: "account", names: []string{"a", "b"}, set: map[string]string{}}},
		{args: "add user carol Account=nlp",
			want: sacctmgrChange{verb: "add", entity: "user", names: []string{"carol"}, set: map[string]string{"account": "nlp"}}},
		{args: "modify qos where name=high set Priority=20 UsageFactor=2",
			want: sacctmgrChange{verb: "modify", entity: "qos", names: []string{"high"}, set: map[string]string{"priority": "20", "usagefactor": "2"}}},
		{args: "modify account nlp set parent=root qos=normal,high defaultqos=normal",
			want: sacctmgrChange{verb: "modify", entity: "account", names: []string{"nlp"}, set: map[string]string{"parent": "root", "qos": "normal,high", "defaultqos": "normal"}}},
		{args: "delete qos name=old", want: sacctmgrChange{verb: "delete", entity: "qos", names: []string{"old"}, set: map[string]string{}}},
		{args: "remove account where name=gone", want: sacctmgrChange{verb: "delete", entity: "account", names: []string{"gone"}, set: map[string]string{}}},
		{args: "add account", wantErr: "name which account"},
		{args: "add user carol", wantErr: "Account= is required"},
		{args: "add account x GrpTRES=gres/gpu=8", wantErr: "grptres cannot be set here"},
		{args: "modify qos high", wantErr: "nothing to set"},
		{args: "modify qos where priority=1 set priority=2", wantErr: "only name= can select"},
		{args: "add qos x set priority=1", wantErr: "'set' is only for modify"},
		{args: "delete user alice", wantErr: "spec.users"},
		{args: "add cluster c", wantErr: "unknown entity"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			got, err := parseSacctmgrChange(strings.Fields(tc.args))
			if tc.wantErr != "" {
				var ue UsageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want a usage error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.where = map[string]string{}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSacctmgrChangeNeedsYes: without -i, the summary is shown and only a
// 'y' commits; anything else (or silence) discards, as sacctmgr does.
func TestSacctmgrChangeNeedsYes(t *testing.T) {
	for answer, want := range map[string]bool{"y\n": true, "yes\n": true, "n\n": false, "\n": false, "": false} {
		if got := confirmed(strings.NewReader(answer), time.Second); got != want {
			t.Errorf("answer %q: committed %v, want %v", answer, got, want)
		}
	}
	r, w := io.Pipe()
	defer w.Close()
	if confirmed(r, 10*time.Millisecond) {
		t.Error("no answer committed the change")
	}
	var out strings.Builder
	ch, err := parseSacctmgrChange(strings.Fields("add qos high Priority=10"))
	if err != nil {
		t.Fatal(err)
	}
	if err := runSacctmgrChange(t.Context(), nil, ch, false, strings.NewReader("n\n"), &out); err != nil {
		t.Fatal(err)
	}
	want := " Adding QOS(s)\n  high\n Settings\n  priority        = 10\nWould you like to commit changes? (You have 30 seconds to decide)\n(N/y):  Changes Discarded\n"
	if out.String() != want {
		t.Errorf("output:\n%q\nwant\n%q", out.String(), want)
	}
}
