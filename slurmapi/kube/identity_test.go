package kube

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/slurmapi"
)

func TestUserMap(t *testing.T) {
	alice := UserIDs{UID: 1001, GID: 100, Groups: []int64{2000}, Home: "/home/alice"}
	aliceRuns := UserIDs{UID: 1001, GID: 100, Groups: []int64{100, 2000}, Home: "/home/alice"}
	users := map[string]UserIDs{"alice": alice, "admin": {UID: 0, GID: 0}}
	tests := []struct {
		name    string
		m       UserMap
		user    string
		want    UserIDs
		wantErr string
	}{
		{"mapped user runs as mapped, in their primary group too", UserMap{Users: users}, "alice", aliceRuns, ""},
		{"a user mapped to root runs as root", UserMap{Users: users}, "admin", UserIDs{Groups: []int64{0}}, ""},
		{"unmapped user runs as nobody by default", UserMap{Users: users}, "bob", NobodyIDs, ""},
		{"unmapped user runs as the site's default", UserMap{Users: users, Unmapped: UnmappedRun, Default: &UserIDs{UID: 5000, GID: 5000}}, "bob", UserIDs{UID: 5000, GID: 5000}, ""},
		{"unmapped user refused", UserMap{Users: users, Unmapped: UnmappedRefuse}, "bob", UserIDs{}, `user "bob" has no uid`},
		{"mapped user runs where unmapped are refused", UserMap{Users: users, Unmapped: UnmappedRefuse}, "alice", aliceRuns, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.m.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := tc.m.Lookup(context.Background(), tc.user)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrUnknownUser) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Lookup(%s) = %v, %v; want an unknown user saying %q", tc.user, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Lookup(%s) = %+v, %v; want %+v", tc.user, got, err, tc.want)
			}
		})
	}
}

// fakeSource is an identity source that knows users, or fails with err.
type fakeSource struct {
	name  string
	users map[string]UserIDs
	err   error
	asked *[]string
}

func (f fakeSource) String() string { return f.name }

func (f fakeSource) Lookup(_ context.Context, user string) (UserIDs, error) {
	if f.asked != nil {
		*f.asked = append(*f.asked, f.name)
	}
	if f.err != nil {
		return UserIDs{}, f.err
	}
	if ids, ok := f.users[user]; ok {
		return ids, nil
	}
	return UserIDs{}, ErrUnknownUser
}

// TestUserMapSourceOrder: slurm.users first, then each source in order; the
// first that knows the user answers; a source that cannot answer stops the
// lookup (the sources after it may not override it) as unavailable, not
// unknown; a source's uid 0 maps no one.
func TestUserMapSourceOrder(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:1: connection refused")
	files := func(asked *[]string) fakeSource {
		return fakeSource{name: "files", asked: asked, users: map[string]UserIDs{
			"alice": {UID: 2001, GID: 2000}, "carol": {UID: 2003, GID: 2000}, "root": {UID: 0, GID: 0}}}
	}
	ldap := func(asked *[]string) fakeSource {
		return fakeSource{name: "ldap", asked: asked, users: map[string]UserIDs{
			"carol": {UID: 3003, GID: 3000}, "dave": {UID: 3004, GID: 3000, Home: "/home/dave"}}}
	}
	tests := []struct {
		user      string
		ldapDown  bool
		want      UserIDs
		wantAsked []string
		wantErr   error
	}{
		{"alice", false, UserIDs{UID: 1001, GID: 100, Groups: []int64{100}}, nil, nil},
		{"carol", false, UserIDs{UID: 2003, GID: 2000, Groups: []int64{2000}}, []string{"files"}, nil},
		{"dave", false, UserIDs{UID: 3004, GID: 3000, Groups: []int64{3000}, Home: "/home/dave"}, []string{"files", "ldap"}, nil},
		{"erin", false, UserIDs{}, []string{"files", "ldap"}, ErrUnknownUser},
		{"root", false, UserIDs{}, []string{"files", "ldap"}, ErrUnknownUser},
		{"carol", true, UserIDs{UID: 2003, GID: 2000, Groups: []int64{2000}}, []string{"files"}, nil},
		{"dave", true, UserIDs{}, []string{"files", "ldap"}, ErrIdentityUnavailable},
	}
	for _, tc := range tests {
		var asked []string
		l := ldap(&asked)
		if tc.ldapDown {
			l.err = down
		}
		m := UserMap{Users: map[string]UserIDs{"alice": {UID: 1001, GID: 100}}, Sources: []IdentitySource{files(&asked), l}, Unmapped: UnmappedRefuse}
		got, err := m.Lookup(context.Background(), tc.user)
		if !reflect.DeepEqual(asked, tc.wantAsked) {
			t.Errorf("%s (ldap down %v): asked %v, want %v", tc.user, tc.ldapDown, asked, tc.wantAsked)
		}
		if tc.wantErr != nil {
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s (ldap down %v): %+v, %v; want %v", tc.user, tc.ldapDown, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s (ldap down %v): %+v, %v; want %+v", tc.user, tc.ldapDown, got, err, tc.want)
		}
	}
}

// TestCheckSubmitter: the REST API's answer to a submission: none for a
// user who may run; 403 "Invalid user id" naming where to map the user for
// one no one maps at a site that refuses them; 503 with Retry-After when the
// directory is down, saying so.
func TestCheckSubmitter(t *testing.T) {
	ldap := fakeSource{name: "LDAP directory ldap://ldap.example", users: map[string]UserIDs{"alice": {UID: 3001, GID: 3000}}}
	down := ldap
	down.err = errors.New("LDAP directory ldap://ldap.example is unreachable: connection refused")
	tests := []struct {
		name       string
		m          UserMap
		user       string
		wantStatus int
		wantText   []string
	}{
		{"known user", UserMap{Sources: []IdentitySource{ldap}, Unmapped: UnmappedRefuse}, "alice", 0, nil},
		{"unknown user, unmapped run", UserMap{Sources: []IdentitySource{ldap}}, "bob", 0, nil},
		{"unknown user refused", UserMap{Sources: []IdentitySource{ldap}, Unmapped: UnmappedRefuse}, "bob", http.StatusForbidden,
			[]string{"user bob has no uid", "slurm.users, LDAP directory ldap://ldap.example", "slurm.unmappedUsers: run"}},
		{"no sources: says which exist", UserMap{Unmapped: UnmappedRefuse}, "bob", http.StatusForbidden,
			[]string{"slurm.users", "slurm.identity"}},
		{"directory down", UserMap{Sources: []IdentitySource{down}, Unmapped: UnmappedRefuse}, "alice", http.StatusServiceUnavailable,
			[]string{"could not be looked up", "unreachable", "try again"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.m.CheckSubmitter(context.Background(), tc.user)
			if tc.wantStatus == 0 {
				if e != nil {
					t.Fatalf("refused: %v", e)
				}
				return
			}
			if e == nil || e.Status != tc.wantStatus || e.Number != slurmapi.ErrUserIDMissing || e.Short != "Invalid user id" {
				t.Fatalf("got %+v, want %d, 2010 Invalid user id", e, tc.wantStatus)
			}
			if (tc.wantStatus == http.StatusServiceUnavailable) != (e.RetryAfter > 0) {
				t.Errorf("Retry-After %v with status %d", e.RetryAfter, e.Status)
			}
			for _, s := range tc.wantText {
				if !strings.Contains(e.Description, s) {
					t.Errorf("description %q does not say %q", e.Description, s)
				}
			}
		})
	}
}

func TestUserMapValidate(t *testing.T) {
	tests := []struct {
		m       UserMap
		wantErr string
	}{
		{UserMap{Default: &UserIDs{UID: 0, GID: 5}}, "want a non-root uid"},
		{UserMap{Default: &UserIDs{UID: -1, GID: 5}}, "want a non-root uid"},
		{UserMap{Default: &UserIDs{UID: 5, GID: -1}}, "gid -1"},
		{UserMap{Unmapped: "allow"}, `unmapped users "allow": want "run" or "refuse"`},
		{UserMap{Users: map[string]UserIDs{"alice": {UID: 1001, GID: 1001, Home: "home/alice"}}}, `user alice: home "home/alice": want an absolute path`},
		{UserMap{Users: map[string]UserIDs{"alice": {UID: 1001, GID: 1001, Groups: []int64{-2}}}}, "user alice: uid, gid and groups must be 0 or more"},
	}
	for _, tc := range tests {
		if err := tc.m.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Validate(%+v) = %v, want an error saying %q", tc.m, err, tc.wantErr)
		}
	}
}
