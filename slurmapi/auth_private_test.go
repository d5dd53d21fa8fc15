package slurmapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// siteAccounts is the accounts side of the ledger server's site (newLedgerServer):
// research -> nlp (alice, carol), vision (bob). testAuth makes carol nlp's
// coordinator, slurm an operator, root and boss admins.
type siteAccounts struct{ Backend }

func (siteAccounts) Accounts(context.Context) ([]Account, error) {
	return []Account{{Name: "research"}, {Name: "nlp", Parent: "research"}, {Name: "vision", Parent: "research"}}, nil
}

func (siteAccounts) Associations(context.Context) ([]Association, error) {
	return []Association{
		{ID: 1, Account: "research"}, {ID: 2, Account: "nlp", Parent: "research"}, {ID: 3, Account: "vision", Parent: "research"},
		{ID: 4, Account: "nlp", User: "alice", Parent: "nlp", IsDefault: true}, {ID: 5, Account: "nlp", User: "carol", Parent: "nlp", IsDefault: true},
		{ID: 6, Account: "vision", User: "bob", Parent: "vision", IsDefault: true},
	}, nil
}

// Users are the association's users, with their associations, as the cluster backend lists them.
func (b siteAccounts) Users(ctx context.Context) ([]User, error) {
	assocs, _ := b.Associations(ctx)
	var out []User
	for _, name := range []string{"alice", "bob", "carol"} {
		u := User{Name: name, AdminLevel: "None"}
		for _, a := range assocs {
			if a.User == name {
				u.Associations, u.DefaultAccount = append(u.Associations, a), a.Account
			}
		}
		out = append(out, u)
	}
	return out, nil
}

// seen lists what an answer shows, one word per row: accounts and sshare rows by
// name, associations as account/user, users as user:account,... (the accounts of
// the associations the record carries).
func seen(r reply) []string {
	var rows []any
	for _, key := range []string{"accounts", "associations", "users"} {
		if list, ok := r.doc[key].([]any); ok {
			rows = list
		}
	}
	if sh, ok := r.doc["shares"].(map[string]any); ok {
		rows, _ = sh["shares"].([]any)
	}
	out := []string{}
	for _, x := range rows {
		m := x.(map[string]any)
		switch {
		case m["account"] != nil:
			out = append(out, strings.TrimSuffix(m["account"].(string)+"/"+m["user"].(string), "/"))
		case m["administrator_level"] != nil:
			var accts []string
			for _, a := range m["associations"].([]any) {
				accts = append(accts, a.(map[string]any)["account"].(string))
			}
			out = append(out, m["name"].(string)+":"+strings.Join(accts, ","))
		default:
			out = append(out, m["name"].(string))
		}
	}
	return out
}

// What each PrivateData value hides, as the caller notices it over REST: users see
// their own, a coordinator (carol, of nlp) also her account's where Slurm shows
// coordinators more, operators and admins everything; values the site did not set
// hide nothing.
func TestPrivateDataOverREST(t *testing.T) {
	const db, ctl = "/slurmdb/v0.0.45/", "/slurm/v0.0.45/"
	everyUser := []string{"alice:nlp", "bob:vision", "carol:nlp"}
	everyAssoc := []string{"research", "nlp", "vision", "nlp/alice", "nlp/carol", "vision/bob"}
	everyShare := []string{"root", "research", "nlp", "alice", "carol", "vision", "bob", "team-cv"} // team-cv: the manifest workload's user
	tests := []struct {
		private []string
		user    string
		path    string
		status  int // 0: 200
		want    []string
	}{
		// users: one's own record only, coordinators included; associations one's own.
		{[]string{"users"}, "alice", db + "users", 0, []string{"alice:nlp"}},
		{[]string{"users"}, "carol", db + "users", 0, []string{"carol:nlp"}},
		{[]string{"users"}, "slurm", db + "users", 0, everyUser},
		{[]string{"users"}, "root", db + "users", 0, everyUser},
		{[]string{"users"}, "alice", db + "user/alice", 0, []string{"alice:nlp"}},
		{[]string{"users"}, "alice", db + "user/bob", http.StatusForbidden, nil},
		{[]string{"users"}, "alice", db + "user/nobody", http.StatusForbidden, nil},
		{[]string{"users"}, "boss", db + "user/bob", 0, []string{"bob:vision"}},
		{[]string{"users"}, "alice", db + "associations", 0, []string{"nlp/alice"}},
		{[]string{"users"}, "carol", db + "associations", 0, []string{"nlp", "nlp/alice", "nlp/carol"}},
		{[]string{"users"}, "alice", db + "accounts", 0, []string{"research", "nlp", "vision"}},
		// accounts: those one belongs to or coordinates, and their associations.
		{[]string{"accounts"}, "alice", db + "accounts", 0, []string{"nlp"}},
		{[]string{"accounts"}, "bob", db + "accounts", 0, []string{"vision"}},
		{[]string{"accounts"}, "dave", db + "accounts", 0, []string{}},
		{[]string{"accounts"}, "slurm", db + "accounts", 0, []string{"research", "nlp", "vision"}},
		{[]string{"accounts"}, "alice", db + "account/nlp", 0, []string{"nlp"}},
		{[]string{"accounts"}, "alice", db + "account/vision", http.StatusForbidden, nil},
		{[]string{"accounts"}, "alice", db + "account/nosuch", http.StatusForbidden, nil},
		{[]string{"accounts"}, "root", db + "account/nosuch", http.StatusNotFound, nil},
		{[]string{"accounts"}, "alice", db + "associations", 0, []string{"nlp", "nlp/alice", "nlp/carol"}},
		{[]string{"accounts"}, "alice", db + "users", 0, []string{"alice:nlp", "bob:", "carol:nlp"}},
		{[]string{"accounts", "users"}, "alice", db + "associations", 0, []string{"nlp/alice"}},
		// usage: sshare shows a user their own rows, a coordinator her account's.
		{[]string{"usage"}, "alice", ctl + "shares", 0, []string{"alice"}},
		{[]string{"usage"}, "bob", ctl + "shares", 0, []string{"bob"}},
		{[]string{"usage"}, "carol", ctl + "shares", 0, []string{"nlp", "alice", "carol"}},
		{[]string{"usage"}, "slurm", ctl + "shares", 0, everyShare},
		{[]string{"usage"}, "alice", ctl + "shares?users=bob", 0, []string{}},
		{[]string{"usage"}, "alice", db + "users", 0, everyUser},
		// Nothing private: everyone sees everything, as Slurm's default.
		{nil, "alice", db + "users", 0, everyUser},
		{nil, "alice", db + "user/bob", 0, []string{"bob:vision"}},
		{nil, "alice", db + "associations", 0, everyAssoc},
		{nil, "dave", db + "accounts", 0, []string{"research", "nlp", "vision"}},
		{nil, "alice", ctl + "shares", 0, everyShare},
		{[]string{"jobs"}, "alice", ctl + "shares", 0, everyShare},
	}
	servers := map[string]*httptest.Server{} // one per privateData
	for _, tt := range tests {
		key := strings.Join(tt.private, ",")
		if servers[key] == nil {
			auth := *testAuth()
			auth.PrivateJobs = slices.Contains(tt.private, "jobs")
			auth.PrivateAccounts = slices.Contains(tt.private, "accounts")
			auth.PrivateUsage = slices.Contains(tt.private, "usage")
			auth.PrivateUsers = slices.Contains(tt.private, "users")
			servers[key] = newLedgerServerOver(t, auth, siteAccounts{})
		}
		r := dbGet(t, servers[key], tt.path, tokenFor(t, tt.user))
		want := tt.status
		if want == 0 {
			want = http.StatusOK
		}
		if r.status != want {
			t.Errorf("privateData %v, %s GET %s: %d %s, want %d", tt.private, tt.user, tt.path, r.status, r.body, want)
			continue
		}
		if want == http.StatusOK && !slices.Equal(seen(r), tt.want) {
			t.Errorf("privateData %v, %s GET %s: sees %q, want %q", tt.private, tt.user, tt.path, seen(r), tt.want)
		}
		if want == http.StatusForbidden && !strings.Contains(firstError(t, r)["description"].(string), "private (PrivateData=") {
			t.Errorf("privateData %v, %s GET %s: %s, want it to say what is private", tt.private, tt.user, tt.path, r.body)
		}
	}
}
