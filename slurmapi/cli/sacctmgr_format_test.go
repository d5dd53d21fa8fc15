package cli

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi/client"
)

// sacctmgr show assoc where user=... format=..., as admins type it.
func TestSacctmgrShowFormatAndFilters(t *testing.T) {
	assoc := func(account, user string, maxSubmit int64) client.Association {
		a := client.Association{Cluster: "sluice", Account: account, User: user}
		a.Max.Jobs.Per.Submitted = client.NoVal{Set: maxSubmit > 0, Number: maxSubmit}
		return a
	}
	rows := []client.Association{assoc("nlp", "", 0), assoc("nlp", "alice", 50), assoc("vision", "bob", 0)}
	list := func(context.Context) ([]client.Association, error) { return slices.Clone(rows), nil }
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"where", "user=alice", "format=Cluster,Account,User,MaxSubmit"}, "Cluster|Account|User|MaxSubmit\nsluice|nlp|alice|50\n"},
		{[]string{"accounts=vision", "format=account,user%20"}, "Account|User\nvision|bob\n"},
		{[]string{"format=User,DefaultQOS"}, "User|Def QOS\n|\nalice|\nbob|\n"},
	}
	for _, tt := range tests {
		q, err := showFormat(tt.words)
		if err != nil {
			t.Fatalf("%q: %v", tt.words, err)
		}
		var out strings.Builder
		if err := showEntity(context.Background(), &out, list, assocColumns, q, false, true); err != nil {
			t.Fatalf("%q: %v", tt.words, err)
		}
		if out.String() != tt.want {
			t.Errorf("sacctmgr -P show assoc %q:\n%s\nwant:\n%s", tt.words, out.String(), tt.want)
		}
	}
	for _, bad := range [][]string{{"format=Colour"}, {"where", "colour=red"}, {"sometimes"}} {
		q, err := showFormat(bad)
		if err == nil {
			err = showEntity(context.Background(), &strings.Builder{}, list, assocColumns, q, false, true)
		}
		if _, ok := err.(UsageError); !ok {
			t.Errorf("sacctmgr show assoc %q: %v, want a usage error", bad, err)
		}
	}
}
